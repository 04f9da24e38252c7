// SPDX-License-Identifier: Apache-2.0
// proxy/wire/placeholder_swap: a placeholder swapped only at its places (SPEC §19a), every other
// occurrence in any spelling `secret misdirected`, the swap bounded by the head limit.
#include <doctest/doctest.h>

#include <array>
#include <string>

#include "map_secrets.h"
#include "proxy/wire/placeholder_swap.h"
#include "table/base64.h"

using namespace boxproxy;
using boxproxy::testing::MapSecrets;

namespace {

struct Session {
  Placeholders placeholders;
  std::string api = make_placeholder("api", std::array<std::uint8_t, kPlaceholderRandomBytes>{1, 2, 3});
  std::string other = make_placeholder("other", std::array<std::uint8_t, kPlaceholderRandomBytes>{9});
  MapSecrets secrets;
  Session() {
    placeholders.set("api", api);
    placeholders.set("other", other);
    secrets.values = {{"api", "V4LUE-with/&?=#%-bytes"}, {"other", "0THER-value-12"}};
  }
};

// Parsed heads keep views into their text: each is kept alive with it.
struct Head {
  std::string text;
  RequestHead head;
  explicit Head(std::string t) : text(std::move(t)) {
    const auto parsed = parse_request_head(text, 1 << 20);
    REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
    head = *parsed.value;
  }
  // A copy parses its own text again: the views must point into it, not into the original.
  Head(const Head& other) : Head(other.text) {}
  Head& operator=(const Head&) = delete;
};

Head get(const std::string& target, const std::string& headers = "") {
  return Head("GET " + target + " HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
}

InspectEndpoint listing(std::vector<std::string> names) {
  InspectEndpoint endpoint;
  endpoint.secrets = std::move(names);
  return endpoint;
}

InspectEndpoint placing(const std::string& name, const std::vector<std::string>& places) {
  InspectEndpoint endpoint;
  endpoint.secrets = {name};
  std::vector<SecretPlace> parsed;
  for (const std::string& text : places) parsed.push_back(std::get<SecretPlace>(parse_secret_place(text)));
  endpoint.secret_places.emplace_back(name, parsed);
  return endpoint;
}

std::string b64(std::string_view text) { return base64_encode(text, Base64Alphabet::standard, true); }

std::string header_value(const SwappedHead& swapped, std::string_view name) {
  for (const HeaderField& field : swapped.head().headers) {
    if (field.name == name) return std::string(field.value);
  }
  return "(none)";
}

}  // namespace

TEST_CASE("list form: swapped in Authorization only, whole, Bearer, token, and Basic's user or password") {
  const Session s;
  const InspectEndpoint endpoint = listing({"api"});
  const std::string value = s.secrets.values.at("api");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {s.api, value},
      {"Bearer " + s.api, "Bearer " + value},
      {"bearer  " + s.api + " ", "bearer  " + value},  // the head's parser drops trailing white space
      {"token " + s.api, "token " + value},
      {"Basic " + b64("x-access-token:" + s.api), "Basic " + b64("x-access-token:" + value)},
      {"Basic " + b64(s.api + ":x-oauth-basic"), "Basic " + b64(value + ":x-oauth-basic")},
      {"basic " + b64(s.api + ":" + s.api), "basic " + b64(value + ":" + value)},
  };
  for (const auto& [sent, expected] : cases) {
    CAPTURE(sent);
    const Head head = get("/x", "Authorization: " + sent + "\r\n");
    CHECK_FALSE(misdirected_placeholder(head.head, endpoint, s.placeholders));
    const SwappedHead swapped(head.head, endpoint, s.placeholders, s.secrets);
    CHECK(header_value(swapped, "Authorization") == expected);
    CHECK(swapped.swaps() == std::vector<std::string>{"api@authorization"});
    CHECK_FALSE(swapped.missing());
    CHECK_FALSE(swapped.target_changed());
    CHECK(swapped.head_bytes() == request_head_bytes(swapped.head()));
  }
}

TEST_CASE("list form: anywhere else, or not the whole credential, it is misdirected and never swapped") {
  const Session s;
  const InspectEndpoint endpoint = listing({"api"});
  const std::vector<Head> heads = {
      get("/x?k=" + s.api),                                    // the query
      get("/" + s.api),                                        // the path
      get("/x", "X-Api-Key: " + s.api + "\r\n"),               // another header
      get("/x", "Authorization: Bearer x" + s.api + "\r\n"),   // not the whole credential
      get("/x", "Authorization: Bearer " + s.api + "x\r\n"),
      get("/x", "Authorization: " + s.api + "," + s.api + "\r\n"),
      get("/x", "Authorization: Basic " + b64(s.api + "x:p") + "\r\n"),
      get("/x", "Authorization: Digest " + s.api + "\r\n"),    // another scheme
      get("/x", "Authorization: Basic " + b64("u:p" + s.api) + "\r\n"),  // inside the password
      get("/x", "Authorization: Bearer %62" + s.api.substr(1) + "\r\n"), // encoded: not as made
      get("/x", "Authorization: Bearer " + s.other + "\r\n"),  // a name the endpoint does not list
      get("/x", "X-" + s.api + ": 1\r\n"),                     // a header's name
  };
  for (const Head& head : heads) {
    CAPTURE(head.text);
    CHECK(misdirected_placeholder(head.head, endpoint, s.placeholders).has_value());
    const SwappedHead swapped(head.head, endpoint, s.placeholders, s.secrets);
    CHECK(swapped.swaps().empty());
    CHECK(swapped.head().target == head.head.target);
  }
}

TEST_CASE("object form: header:<name> swaps every occurrence in that header; query:<param> the whole value, encoded") {
  const Session s;
  InspectEndpoint endpoint = placing("api", {"header:x-api-key", "query:key", "authorization"});
  const std::string value = s.secrets.values.at("api");
  const Head head = get("/v1/items?a=1&key=" + s.api + "&b=2",
                        "X-API-Key: k1=" + s.api + ";k2=" + s.api + "\r\nAuthorization: Bearer " + s.api + "\r\n");
  CHECK_FALSE(misdirected_placeholder(head.head, endpoint, s.placeholders));
  const SwappedHead swapped(head.head, endpoint, s.placeholders, s.secrets);
  CHECK(swapped.target_changed());
  CHECK(swapped.head().target == "/v1/items?a=1&key=V4LUE-with%2F%26%3F%3D%23%25-bytes&b=2");
  CHECK(header_value(swapped, "X-API-Key") == "k1=" + value + ";k2=" + value);
  CHECK(header_value(swapped, "Authorization") == "Bearer " + value);
  CHECK(swapped.swaps() == std::vector<std::string>{"api@query:key", "api@header:x-api-key", "api@authorization"});
  CHECK(swapped.head_bytes() == request_head_bytes(swapped.head()));
}

TEST_CASE("object form: a place not named is misdirected (query's other params, the path, a part of a value)") {
  const Session s;
  const InspectEndpoint endpoint = placing("api", {"query:key"});
  for (const Head& head : {get("/v1?other=" + s.api), get("/v1?key=x" + s.api), get("/" + s.api + "?key=1"),
                           get("/v1?key=" + s.api + "#", ""), get("/v1", "Authorization: " + s.api + "\r\n"),
                           get("/v1?key=" + s.api + "&k=" + s.api)}) {
    CAPTURE(head.text);
    CHECK(misdirected_placeholder(head.head, endpoint, s.placeholders).has_value());
  }
  CHECK_FALSE(misdirected_placeholder(get("/v1?key=" + s.api + "&key=" + s.api).head, endpoint, s.placeholders));
}

TEST_CASE("tripwire at the endpoint: every spelling outside a place names the secret") {
  const Session s;
  const InspectEndpoint endpoint = placing("api", {"header:x-api-key"});
  std::string percent;
  for (const char c : s.api) percent += "%" + std::string(1, "0123456789ABCDEF"[c >> 4]) + "0123456789ABCDEF"[c & 15];
  std::string twice;
  for (const char c : percent) twice += c == '%' ? std::string("%25") : std::string(1, c);
  for (const Head& head : {get("/x?q=" + percent), get("/x?q=" + twice),
                           get("/x", "X-Api-Key: " + percent + "\r\n"),  // its place, but not as made
                           get("/x", "Cookie: s=" + b64("{\"k\":\"" + s.api + "\"}") + "\r\n"),
                           get("/x?q=" + base64_encode("zz" + s.api, Base64Alphabet::url, false)),
                           get("/x", "Authorization: Basic " + b64("u:" + s.api) + "\r\n")}) {
    CAPTURE(head.text);
    CHECK(misdirected_placeholder(head.head, endpoint, s.placeholders) == std::optional<std::string>("api"));
  }
  // At another destination (an endpoint with no "secrets"), anywhere at all.
  CHECK(misdirected_placeholder(get("/x", "X-Api-Key: " + s.api + "\r\n").head, InspectEndpoint{}, s.placeholders) ==
        std::optional<std::string>("api"));
}

TEST_CASE("a placeholder at its place whose value is not set: missing, named, nothing swapped for it") {
  const Session s;
  const Head head = get("/x", "Authorization: Bearer " + s.api + "\r\n");
  const SwappedHead unset(head.head, listing({"api"}), s.placeholders, MapSecrets{});
  CHECK(unset.missing() == std::optional<std::string>("api"));
  CHECK(header_value(unset, "Authorization") == "Bearer " + s.api);
  // An endpoint that lists nothing: untouched.
  const SwappedHead untouched(head.head, InspectEndpoint{}, s.placeholders, s.secrets);
  CHECK(header_value(untouched, "Authorization") == "Bearer " + s.api);
  CHECK(untouched.swaps().empty());
}

TEST_CASE("the swap is bounded: a head that would grow past the limit is flagged before it is built") {
  Session s;
  s.secrets.values["api"] = std::string(4096, 'v');
  const InspectEndpoint endpoint = placing("api", {"header:x-many"});
  std::string many;
  for (int i = 0; i < 777; ++i) many += s.api + ",";
  const Head head = get("/x", "X-Many: " + many + "\r\n");
  const std::size_t before = request_head_bytes(head.head);
  const SwappedHead over(head.head, endpoint, s.placeholders, s.secrets, 65536);
  CHECK(over.too_large());
  CHECK(over.head_bytes() == before);
  CHECK(header_value(over, "X-Many") == many);  // the original, nothing built
  CHECK(over.swaps().empty());
  // Under the limit: the size is the swapped head's.
  const SwappedHead under(head.head, endpoint, s.placeholders, s.secrets, 4 << 20);
  CHECK_FALSE(under.too_large());
  CHECK(under.head_bytes() == request_head_bytes(under.head()));
  CHECK(under.head_bytes() == before + 777 * (4096 - s.api.size()));
  // Exactly at the limit is within it.
  const SwappedHead exact(head.head, endpoint, s.placeholders, s.secrets, under.head_bytes());
  CHECK_FALSE(exact.too_large());
  const SwappedHead one_less(head.head, endpoint, s.placeholders, s.secrets, under.head_bytes() - 1);
  CHECK(one_less.too_large());
}
