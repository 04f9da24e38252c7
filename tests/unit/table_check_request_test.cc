// SPDX-License-Identifier: Apache-2.0
// table/check_request: "METHOD https://host[:port]/path" as `boxproxy check` takes it (SPEC §18).
#include <doctest/doctest.h>

#include "table/check_request.h"

using namespace boxproxy;

namespace {

CheckRequest request(std::string_view text) {
  auto parsed = parse_check_request(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(text << ": " << *error);
  return std::get<CheckRequest>(parsed);
}

std::string error_of(std::string_view text) {
  auto parsed = parse_check_request(text);
  REQUIRE_MESSAGE(std::holds_alternative<std::string>(parsed), text);
  return std::get<std::string>(parsed);
}

}  // namespace

TEST_CASE("a request: the method, the authority and the target a client would send") {
  struct Row {
    const char* text;
    const char* method;
    const char* authority;
    const char* target;
  };
  const Row rows[] = {
      {"GET https://api.github.com/repos/acme", "GET", "api.github.com", "/repos/acme"},
      {"get HTTPS://API.github.com:8443/x?y=1", "get", "API.github.com:8443", "/x?y=1"},
      {"GET https://api.github.com", "GET", "api.github.com", "/"},
      {"GET https://api.github.com?q", "GET", "api.github.com", "/?q"},
      {"GET https://api.github.com/a#frag/../..", "GET", "api.github.com", "/a"},
      {"GET https://api.github.com#x", "GET", "api.github.com", "/"},
      {"PROPFIND \t https://h.test/a/../b", "PROPFIND", "h.test", "/a/../b"},  // judged later, as written
      {"GET https://[::1]:443/x", "GET", "[::1]:443", "/x"},
      {"GET https://user@h.test/", "GET", "user@h.test", "/"},  // the authority's parser refuses it
      {"GET https:///x", "GET", "", "/x"},
      {"GET https://h.test/a b ", "GET", "h.test", "/a b"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const CheckRequest r = request(row.text);
    CHECK(r.method == row.method);
    CHECK(r.authority == row.authority);
    CHECK(r.target == row.target);
  }
}

TEST_CASE("what is not METHOD and an https URL says why") {
  CHECK(error_of("https://api.github.com/x").find("one argument") != std::string::npos);
  CHECK(error_of("GET").find("one argument") != std::string::npos);
  CHECK(error_of("GET ").find("one argument") != std::string::npos);
  CHECK(error_of(" https://x.test/").find("one argument") != std::string::npos);
  CHECK(error_of("GET http://x.test/").find("https") != std::string::npos);
  CHECK(error_of("GET ftp://x.test/").find("https") != std::string::npos);
  CHECK(error_of("GET https:/x.test/").find("https") != std::string::npos);
  CHECK(error_of("GE(T https://x.test/").find("method") != std::string::npos);
  CHECK(error_of("* https://x.test/").find("method") != std::string::npos);
}

TEST_CASE("only a text holding :// names a request") {
  CHECK(names_request("GET https://x.test/"));
  CHECK(names_request("https://x.test"));
  CHECK_FALSE(names_request("x.test:443"));
  CHECK_FALSE(names_request("[::1]:443"));
  CHECK_FALSE(names_request("GET"));
}
