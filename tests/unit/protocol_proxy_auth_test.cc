// SPDX-License-Identifier: Apache-2.0
// proxy/proxy_auth: the session token (SPEC §11).
#include <doctest/doctest.h>

#include <string>

#include "proxy/wire/proxy_auth.h"
#include "table/base64.h"

using namespace boxproxy;
using namespace std::string_literals;

namespace {

RequestHead with_headers(std::vector<HeaderField> headers) {
  RequestHead head;
  head.method = "CONNECT";
  head.target = "example.com:443";
  head.version = "HTTP/1.1";
  head.headers = std::move(headers);
  return head;
}

constexpr std::string_view kToken = "s3cret-T0ken";

}  // namespace

TEST_CASE("token_matches") {
  CHECK(token_matches(kToken, kToken));
  CHECK(token_matches("", ""));
  CHECK_FALSE(token_matches(kToken, ""));
  CHECK_FALSE(token_matches("", "x"));
  CHECK_FALSE(token_matches(kToken, "s3cret-T0ke"));
  CHECK_FALSE(token_matches(kToken, "s3cret-T0kenn"));
  CHECK_FALSE(token_matches(kToken, "s3cret-T0keN"));
  CHECK_FALSE(token_matches(kToken, "S3cret-T0ken"));
  // An offer that is the token repeated must not match (the comparison wraps around the token).
  CHECK_FALSE(token_matches("ab", "abab"));
  CHECK_FALSE(token_matches("ab", "a"));
  CHECK_FALSE(token_matches("a\0b"s, "a"));
  CHECK(token_matches("a\0b"s, "a\0b"s));
}

TEST_CASE("base64_decode_standard, as a Basic credential is read (RFC 7617)") {
  CHECK(base64_decode_standard("") == ""s);
  CHECK(base64_decode_standard("Zg==") == "f"s);
  CHECK(base64_decode_standard("Zm8=") == "fo"s);
  CHECK(base64_decode_standard("Zm9v") == "foo"s);
  CHECK(base64_decode_standard("Zm9vYg==") == "foob"s);
  CHECK(base64_decode_standard("dXNlcjpzM2NyZXQtVDBrZW4=") == "user:s3cret-T0ken"s);
  CHECK(base64_decode_standard("+/+/") == "\xfb\xff\xbf"s);
  CHECK(base64_decode_standard("AAAA") == "\0\0\0"s);
  const char* bad[] = {
      "Zg",      "Zg=",    "Zg===",   "Z===",   "====",  "Zm9v=",  "Zm=v",  "=Zm9",  "Zm9v Zm9v", "Zm9-",
      "Zm9_",    "Zh==",   "Zm9=Zm9v", "Zm9\n", "Zm8=\r", " Zm9v", "Zm9v ", "Zg==Zg==",
  };
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_FALSE(base64_decode_standard(text).has_value());
  }
}

TEST_CASE("http_proxy_authorized: accepted forms") {
  const std::string user_token = "dXNlcjpzM2NyZXQtVDBrZW4=";  // user:s3cret-T0ken
  const std::string empty_user = "OnMzY3JldC1UMGtlbg==";      // :s3cret-T0ken
  const std::string colon_pass = "YTpiOmM=";                  // a:b:c
  const std::string accepted[] = {
      "Bearer s3cret-T0ken", "bearer s3cret-T0ken", "BEARER s3cret-T0ken", "Bearer  s3cret-T0ken",
      "Basic " + user_token, "basic " + user_token, "BASIC " + user_token, "Basic " + empty_user,
  };
  for (const auto& value : accepted) {
    CAPTURE(value);
    CHECK(http_proxy_authorized(with_headers({{"Host", "x"}, {"Proxy-Authorization", value}}), kToken));
    CHECK(http_proxy_authorized(with_headers({{"proxy-authorization", value}}), kToken));
  }
  // A password with a colon in it: the user ends at the first colon.
  CHECK(http_proxy_authorized(with_headers({{"Proxy-Authorization", "Basic " + colon_pass}}), "b:c"));
}

TEST_CASE("http_proxy_authorized: refused forms") {
  const std::string refused[] = {
      "Bearer wrong",
      "Bearer s3cret-T0ke",
      "Bearer s3cret-T0kenx",
      "Bearer",
      "Bearer ",
      "Bearers3cret-T0ken",
      "s3cret-T0ken",
      "Token s3cret-T0ken",
      "Digest s3cret-T0ken",
      "Basic czNjcmV0LVQwa2Vu",        // base64 of the token alone: no user and colon
      "Basic dXNlcjp3cm9uZw==",        // user:wrong
      "Basic dXNlcjpzM2NyZXQtVDBrZW4",  // bad padding
      "Basic dXNlcjpzM2NyZXQtVDBrZW4=x",
      "Basic !!!!",
      "Basic s3cret-T0ken",
      "Basic",
      "Bearer s3cret-T0ken extra",
  };
  for (const auto& value : refused) {
    CAPTURE(value);
    CHECK_FALSE(http_proxy_authorized(with_headers({{"Proxy-Authorization", value}}), kToken));
  }
  CHECK_FALSE(http_proxy_authorized(with_headers({}), kToken));
  CHECK_FALSE(http_proxy_authorized(with_headers({{"Authorization", "Bearer s3cret-T0ken"}}), kToken));
  // Two credentials, even if one is right: refused.
  CHECK_FALSE(http_proxy_authorized(
      with_headers({{"Proxy-Authorization", "Bearer wrong"}, {"Proxy-Authorization", "Bearer s3cret-T0ken"}}), kToken));
  CHECK_FALSE(http_proxy_authorized(
      with_headers({{"Proxy-Authorization", "Bearer s3cret-T0ken"}, {"Proxy-Authorization", "Bearer s3cret-T0ken"}}),
      kToken));
}
