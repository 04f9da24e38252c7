// SPDX-License-Identifier: Apache-2.0
// table/inspect_endpoint's secret places (SPEC §19a): "authorization", "header:<name>",
// "query:<param>", and which places a listed name has.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "table/inspect_endpoint.h"

using namespace boxproxy;

TEST_CASE("secret places: the three forms, read and written back") {
  const auto place = [](std::string_view text) { return std::get<SecretPlace>(parse_secret_place(text)); };
  CHECK(place("authorization") == SecretPlace{SecretPlace::Kind::authorization, ""});
  CHECK(place("header:X-Api-Key") == SecretPlace{SecretPlace::Kind::header, "x-api-key"});
  CHECK(place("query:api_key") == SecretPlace{SecretPlace::Kind::query, "api_key"});
  CHECK(secret_place_text(place("header:X-Api-Key")) == "header:x-api-key");
  CHECK(secret_place_text(place("query:Key")) == "query:Key");
  CHECK(secret_place_text(place("authorization")) == "authorization");
}

TEST_CASE("secret places: what is refused, and why") {
  for (const std::string_view bad : {"", "Authorization", "path", "header:", "header:Host", "header:content-length",
                                     "header:Proxy-Authorization", "header:a b", "query:", "query:a&b", "query:a=b",
                                     "query:a%62", "query:a+b", "query:a#", "query:a b", "cookie:x"}) {
    CAPTURE(bad);
    CHECK(std::holds_alternative<std::string>(parse_secret_place(bad)));
  }
  CHECK(std::holds_alternative<std::string>(parse_secret_place("query:" + std::string(129, 'k'))));
  CHECK(std::holds_alternative<SecretPlace>(parse_secret_place("query:" + std::string(128, 'k'))));
}

TEST_CASE("secret places of a name: none unless listed; the list form's is authorization alone") {
  InspectEndpoint endpoint;
  CHECK(secret_places_of(endpoint, "api").empty());
  endpoint.secrets = {"api", "gh"};
  endpoint.secret_places = {{"gh", {SecretPlace{SecretPlace::Kind::query, "k"}}}};
  CHECK(secret_places_of(endpoint, "api") == std::vector<SecretPlace>{SecretPlace{SecretPlace::Kind::authorization, ""}});
  CHECK(secret_places_of(endpoint, "gh") == std::vector<SecretPlace>{SecretPlace{SecretPlace::Kind::query, "k"}});
  CHECK(secret_places_of(endpoint, "nope").empty());
}
