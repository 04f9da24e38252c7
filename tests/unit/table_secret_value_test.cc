// SPDX-License-Identifier: Apache-2.0
// table/secret_value: a secret's length bounds (SPEC §19a: at least 12 bytes), however it comes.
#include <string>

#include <doctest/doctest.h>

#include "table/secret_value.h"

using namespace boxproxy;

TEST_CASE("a secret is kMinSecretValueBytes to kMaxSecretValueBytes long, by every way it comes in") {
  CHECK(kMinSecretValueBytes == 12);
  for (std::size_t length = 0; length <= kMinSecretValueBytes + 1; ++length) {
    CAPTURE(length);
    const std::string value(length, 'k');
    const bool good = length >= kMinSecretValueBytes;
    const auto error = check_secret_value(value);
    CHECK(error.has_value() == !good);
    if (length > 0 && !good) {
      CHECK(error->find("shorter than 12 bytes") != std::string::npos);
      CHECK(error->find(value) == std::string::npos);  // never the value itself
    }
    // A --secret file (and its SIGHUP re-read): the line end does not count.
    std::string file = value + "\n";
    CHECK(secret_from_file_contents(file).value.has_value() == good);
    std::string crlf = value + "\r\n";
    CHECK(secret_from_file_contents(crlf).value.has_value() == good);
    // serve's message to its inspector.
    const SecretText hex = secret_hex(value);
    CHECK(secret_from_hex(hex.view()).has_value() == good);
  }
  CHECK(*check_secret_value("") == "is empty");
  CHECK_FALSE(check_secret_value(std::string(kMaxSecretValueBytes, 'x')).has_value());
  CHECK(check_secret_value(std::string(kMaxSecretValueBytes + 1, 'x')).has_value());
  // 11 visible bytes and a line end is still 11.
  std::string eleven = "abcdefghijk\n";
  const SecretOrError read = secret_from_file_contents(eleven);
  CHECK_FALSE(read.value.has_value());
  CHECK(read.error.find("shorter") != std::string::npos);
}
