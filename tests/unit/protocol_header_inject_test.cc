// SPDX-License-Identifier: Apache-2.0
// proxy/wire/header_inject and table/secret_value: templates expanded with secrets, the box's
// headers of an injected name dropped, the value's checks, its hex form and its scrubbing.
#include <doctest/doctest.h>

#include <array>
#include <cctype>
#include <map>
#include <string>

#include "proxy/wire/header_inject.h"
#include "map_secrets.h"
#include "table/secret_value.h"

using namespace boxproxy;

namespace {

using testing::MapSecrets;

}  // namespace

TEST_CASE("expand_inject: each {NAME} replaced; the first name not set is missing, with no text") {
  MapSecrets secrets;
  secrets.values = {{"github", "ghp_1"}, {"user", "me"}};
  const Expansion bearer = expand_inject("Bearer {github}", secrets);
  CHECK_FALSE(bearer.missing);
  CHECK(bearer.text.view() == "Bearer ghp_1");
  CHECK(expand_inject("{user}:{github}{user}", secrets).text.view() == "me:ghp_1me");
  CHECK(expand_inject("plain", secrets).text.view() == "plain");
  const Expansion missing = expand_inject("x {user} {nope} {other}", secrets);
  CHECK(missing.missing == std::optional<std::string>("nope"));
  CHECK(missing.text.empty());
}

TEST_CASE("expand_endpoint_inject: every header, or the first secret missing and no field") {
  InspectEndpoint endpoint;
  endpoint.inject = {{"Authorization", "Bearer {a}"}, {"x-key", "{b}"}};
  MapSecrets secrets;
  secrets.values = {{"a", "A1"}};
  const InjectedFields partial = expand_endpoint_inject(endpoint, secrets);
  CHECK(partial.missing == std::optional<std::string>("b"));
  CHECK(partial.fields.empty());
  secrets.values["b"] = "B2";
  const InjectedFields whole = expand_endpoint_inject(endpoint, secrets);
  CHECK_FALSE(whole.missing);
  REQUIRE(whole.fields.size() == 2);
  CHECK(whole.fields[1].first == "x-key");
  CHECK(whole.fields[1].second.view() == "B2");
}

TEST_CASE("the box's headers of an injected name are dropped in any case") {
  InspectEndpoint endpoint;
  endpoint.inject = {{"Authorization", "{a}"}};
  CHECK(is_injected_header(endpoint, "AUTHORIZATION"));
  CHECK_FALSE(is_injected_header(endpoint, "Authorization2"));
  const std::string text = "GET / HTTP/1.1\r\nauthorization: mine\r\nAccept: */*\r\nAuthorization: two\r\n\r\n";
  const auto parsed = parse_request_head(text, 65536);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  const RequestHead kept = without_injected_headers(*parsed.value, endpoint);
  REQUIRE(kept.headers.size() == 1);
  CHECK(kept.headers[0].name == "Accept");
}

TEST_CASE("a secret's value: visible ASCII, 12 to 4096 bytes; the error never quotes it") {
  CHECK_FALSE(check_secret_value("ghp_abcDEF0123456789").has_value());
  CHECK_FALSE(check_secret_value(std::string(kMaxSecretValueBytes, 'x')).has_value());
  CHECK(check_secret_value(std::string(kMaxSecretValueBytes + 1, 'x')).has_value());
  CHECK(check_secret_value("ghp_abcDEF0").has_value());  // 11 bytes (table_secret_value_test has every length)
  // Each long enough, so that the byte is what is refused.
  const std::string pad = "0123456789ab";
  for (const std::string bad : {std::string(""), pad + "x y", pad + "ab\r", pad + "a\nb", pad + std::string("a\0b", 3),
                                pad + "a\tb", pad + "a\x7f", pad + "caf\xc3\xa9"}) {
    CAPTURE(bad);
    const auto error = check_secret_value(bad);
    REQUIRE(error.has_value());
    if (!bad.empty()) {
      CHECK(error->find(bad) == std::string::npos);
      CHECK(error->find("visible ASCII") != std::string::npos);
    }
  }
}

TEST_CASE("a --secret file's contents: one line end dropped, then checked; the contents scrubbed") {
  std::string contents = "tok3n-0123456789\n";
  SecretOrError read = secret_from_file_contents(contents);
  REQUIRE(read.value);
  CHECK(read.value->view() == "tok3n-0123456789");
  CHECK(contents.empty());
  std::string crlf = "tok3n-0123456789\r\n";
  CHECK(secret_from_file_contents(crlf).value->view() == "tok3n-0123456789");
  std::string two = "tok3n-0123456789\n\n";
  CHECK_FALSE(secret_from_file_contents(two).value);
  std::string empty = "\n";
  const SecretOrError none = secret_from_file_contents(empty);
  CHECK_FALSE(none.value);
  CHECK_FALSE(none.error.empty());
}

TEST_CASE("hex, there and back; anything else refused") {
  const SecretText hex = secret_hex("Ab~456789012");
  CHECK(hex.view() == "41627e343536373839303132");
  const auto back = secret_from_hex(hex.view());
  REQUIRE(back);
  CHECK(back->view() == "Ab~456789012");
  CHECK_FALSE(secret_from_hex("41627e").has_value());  // a value too short, however it is spelled
  for (const char* bad : {"", "4", "4g", "0a", "41 42", "4142zz"}) CHECK_FALSE(secret_from_hex(bad).has_value());
}

TEST_CASE("SecretText: moved from, assigned over and scrubbed leave no byte behind") {
  std::string text = "short";
  scrub(text);
  CHECK(text.empty());
  CHECK(std::string_view(text.data(), 5) == std::string_view("\0\0\0\0\0", 5));

  SecretText a("a-short-one");  // inline in the object: a move copies it
  SecretText b(std::move(a));
  CHECK(b.view() == "a-short-one");
  CHECK(a.empty());  // NOLINT(bugprone-use-after-move): checking what a move leaves is the point
  CHECK(std::string_view(a.text().data(), 11) == std::string_view("\0\0\0\0\0\0\0\0\0\0\0", 11));
  SecretText c(std::string(100, 'z'));
  c = std::move(b);
  CHECK(c.view() == "a-short-one");
}

// The placeholders' swap and tripwire: protocol_placeholder_swap_test.cc.
