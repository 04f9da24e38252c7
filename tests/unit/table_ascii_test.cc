// SPDX-License-Identifier: Apache-2.0
// table/ascii: the one copy of lower-casing, white-space trimming and hex digits. The byte-wise
// helpers are checked on all 256 byte values against <cctype> in the "C" locale (which a test
// binary runs in: nothing calls setlocale), so a byte >= 0x80 is seen as the negative char it is.
#include <cctype>
#include <string>

#include <doctest/doctest.h>

#include "table/ascii.h"

using namespace boxproxy;

namespace {

// Every byte value as the char a parser holds it in.
char byte(int b) { return static_cast<char>(static_cast<unsigned char>(b)); }

}  // namespace

static_assert(ascii_lower('Q') == 'q' && ascii_lower('q') == 'q' && ascii_lower('@') == '@');
static_assert(iequals("Transfer-Encoding", "transfer-encoding"));
static_assert(trim_ows(" \tchunked\t ") == "chunked");
static_assert(hex_value('F') == 15 && hex_value('g') == -1);

TEST_CASE("ascii_lower: A-Z only, every byte") {
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    const int expected = std::tolower(b);  // the "C" locale folds A-Z and nothing else
    CHECK(static_cast<unsigned char>(ascii_lower(byte(b))) == expected);
    CHECK(ascii_lower(byte(b)) == (b >= 'A' && b <= 'Z' ? byte(b + 32) : byte(b)));
  }
}

TEST_CASE("ascii_lower: a text, every byte in it") {
  std::string all;
  for (int b = 0; b < 256; ++b) all += byte(b);
  const std::string lowered = ascii_lower(all);
  REQUIRE(lowered.size() == 256);
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    CHECK(lowered[static_cast<std::size_t>(b)] == ascii_lower(byte(b)));
  }
  CHECK(ascii_lower(std::string_view("WWW.Example.COM.")) == "www.example.com.");
  CHECK(ascii_lower(std::string_view("")).empty());
  CHECK(ascii_lower(std::string_view("a\0B", 3)) == std::string("a\0b", 3));  // a NUL is kept, not an end
}

TEST_CASE("hex_value: 0-9, a-f, A-F, every byte") {
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    int expected = -1;
    if (b >= '0' && b <= '9') expected = b - '0';
    if (b >= 'a' && b <= 'f') expected = b - 'a' + 10;
    if (b >= 'A' && b <= 'F') expected = b - 'A' + 10;
    CHECK(hex_value(byte(b)) == expected);
    CHECK((hex_value(byte(b)) >= 0) == (std::isxdigit(b) != 0));
  }
}

TEST_CASE("is_ows and is_ascii_space, every byte") {
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    CHECK(is_ows(byte(b)) == (b == ' ' || b == '\t'));
    CHECK(is_ascii_space(byte(b)) == (std::isspace(b) != 0));
  }
}

TEST_CASE("trim_ows takes SP and HTAB off the ends, trim_ascii_space isspace's six") {
  struct Row {
    std::string_view text;
    std::string_view ows;    // trim_ows
    std::string_view space;  // trim_ascii_space
  };
  const Row rows[] = {
      {"", "", ""},
      {" ", "", ""},
      {" \t \t", "", ""},
      {"chunked", "chunked", "chunked"},
      {"  chunked\t", "chunked", "chunked"},
      {"\tgzip, chunked ", "gzip, chunked", "gzip, chunked"},  // inside is left alone
      {"a \t b", "a \t b", "a \t b"},
      {"\r\nx\r\n", "\r\nx\r\n", "x"},  // CR and LF are white space, not OWS
      {"\vx\f", "\vx\f", "x"},  // VT and FF too
      {" \t\n\v\f\r", "\n\v\f\r", ""},
      {"\r example.com \t\r", "\r example.com \t\r", "example.com"},
      {"\xa0x\x85", "\xa0x\x85", "\xa0x\x85"},  // bytes >= 0x80 are neither (no Latin-1 NBSP, no NEL)
      // A NUL is not white space.
      {std::string_view(" \0 ", 3), std::string_view("\0", 1), std::string_view("\0", 1)},
  };
  for (const auto& row : rows) {
    CAPTURE(row.text);
    CHECK(trim_ows(row.text) == row.ows);
    CHECK(trim_ascii_space(row.text) == row.space);
  }
}

TEST_CASE("iequals: only A-Z fold") {
  struct Row {
    std::string_view a;
    std::string_view b;
    bool equal;
  };
  const Row rows[] = {
      {"Content-Length", "content-LENGTH", true},
      {"", "", true},
      {"a", "ab", false},
      {"ab", "a", false},
      {"[", "{", false},  // 0x5b vs 0x7b: only letters fold
      {"@", "`", false},  // 0x40 vs 0x60, just outside A-Z
      {"\xc9", "\xe9", false},  // É and é in Latin-1: not ASCII, not folded
      {"chunked", "chunked ", false},
      {std::string_view("a\0", 2), std::string_view("A\0", 2), true},
  };
  for (const auto& row : rows) {
    CAPTURE(row.a);
    CAPTURE(row.b);
    CHECK(iequals(row.a, row.b) == row.equal);
    CHECK(iequals(row.b, row.a) == row.equal);
  }
}

TEST_CASE("iequals: every pair of bytes") {
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      const char a = byte(x);
      const char b = byte(y);
      const bool expected = std::tolower(x) == std::tolower(y);
      const bool got = iequals(std::string_view(&a, 1), std::string_view(&b, 1));
      if (got != expected) {  // 65,536 pairs: only a failing one is reported
        CAPTURE(x);
        CAPTURE(y);
        CHECK(got == expected);
      }
    }
  }
}
