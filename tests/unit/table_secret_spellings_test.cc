// SPDX-License-Identifier: Apache-2.0
// table/secret_spellings and table/base64: every spelling SPEC §19a names, found inside texts that
// encode the value that way, at every offset. The texts are made here by encoders of the test's
// own (a base64 written from RFC 4648's description, not table/base64's), so a fault shared by
// the code and its test cannot hide.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "table/base64.h"
#include "table/secret_spellings.h"

using namespace boxproxy;

namespace {

// RFC 4648 §4/§5, bit by bit: the test's own encoder.
std::string reference_base64(std::string_view bytes, bool url, bool pad) {
  const std::string table = std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") +
                            (url ? "-_" : "+/");
  std::string bits;
  for (const char c : bytes) {
    for (int b = 7; b >= 0; --b) bits.push_back(((static_cast<unsigned char>(c) >> b) & 1) ? '1' : '0');
  }
  while (bits.size() % 6 != 0) bits.push_back('0');
  std::string out;
  for (std::size_t i = 0; i < bits.size(); i += 6) out.push_back(table[std::stoi(bits.substr(i, 6), nullptr, 2)]);
  while (pad && out.size() % 4 != 0) out.push_back('=');
  return out;
}

std::vector<std::string> spelled(std::string_view value) {
  std::vector<std::string> out;
  for (const SecretText& s : secret_spellings(value)) out.emplace_back(s.view());
  return out;
}

// Whether some spelling of `value` lies within `text`.
bool any_found(std::string_view value, std::string_view text) {
  for (const std::string& s : spelled(value)) {
    if (text.find(s) != std::string_view::npos) return true;
  }
  return false;
}

bool has(const std::vector<std::string>& all, std::string_view one) {
  for (const std::string& s : all) {
    if (s == one) return true;
  }
  return false;
}

const std::string kPlain = "sk_live_0123456789abcdefXYZ";      // letters, digits, "-._~" only
const std::string kSpecial = "p@ss/w0rd+\"<&>'\\=?;:!*()x";     // every kind of byte an escape changes

}  // namespace

TEST_CASE("base64: both alphabets, padding or none, against the test's own encoder") {
  std::string bytes;
  for (int i = 0; i < 70; ++i) {
    CAPTURE(i);
    for (const bool url : {false, true}) {
      for (const bool pad : {false, true}) {
        const auto alphabet = url ? Base64Alphabet::url : Base64Alphabet::standard;
        CHECK(base64_encode(bytes, alphabet, pad) == reference_base64(bytes, url, pad));
        CHECK(base64_decode_lenient(reference_base64(bytes, url, pad)) == bytes);
      }
    }
    CHECK(base64_decode_standard(reference_base64(bytes, false, true)) == bytes);
    bytes.push_back(static_cast<char>(i * 37 + 251));
  }
  CHECK_FALSE(base64_decode_lenient("abcde"));        // a lone character
  CHECK_FALSE(base64_decode_lenient("ab=c"));         // '=' inside
  CHECK_FALSE(base64_decode_lenient("ab c"));
  CHECK_FALSE(base64_decode_standard("YWJj-w=="));    // the URL alphabet is not Basic's
  CHECK_FALSE(base64_decode_standard("YWI"));         // unpadded
  CHECK_FALSE(base64_decode_standard("YWJ="));        // non-zero bits under the padding
  CHECK(base64_decode_standard("YWI=") == "ab");
}

TEST_CASE("spellings: a value of letters, digits and -._~ has raw, hex and base64 only") {
  const auto all = spelled(kPlain);
  CHECK(all.front() == kPlain);
  std::string lower_hex, upper_hex;
  for (const char c : kPlain) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(c));
    lower_hex += buf;
    std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned char>(c));
    upper_hex += buf;
  }
  CHECK(has(all, lower_hex));
  CHECK(has(all, upper_hex));
  // Raw, two hex, and base64 at three alignments in two alphabets (less duplicates): no escape.
  CHECK(all.size() <= 9);
  for (const std::string& s : all) CHECK(s.find('%') == std::string::npos);
  for (const std::string& s : all) CHECK(s.find('\\') == std::string::npos);
  for (const std::string& s : all) CHECK(s.find('&') == std::string::npos);
}

TEST_CASE("spellings: percent (both cases, encodeURIComponent's too), JSON and HTML escapes") {
  const auto all = spelled(kSpecial);
  CHECK(has(all, "p%40ss%2Fw0rd%2B%22%3C%26%3E%27%5C%3D%3F%3B%3A%21%2A%28%29x"));
  CHECK(has(all, "p%40ss%2fw0rd%2b%22%3c%26%3e%27%5c%3d%3f%3b%3a%21%2a%28%29x"));
  CHECK(has(all, "p%40ss%2Fw0rd%2B%22%3C%26%3E'%5C%3D%3F%3B%3A!*()x"));  // encodeURIComponent
  CHECK(has(all, R"(p@ss/w0rd+\"<&>'\\=?;:!*()x)"));                       // JSON
  CHECK(has(all, R"(p@ss\/w0rd+\"<&>'\\=?;:!*()x)"));                      // JSON with \/
  CHECK(has(all, R"(p@ss/w0rd+\"\u003c\u0026\u003e'\\=?;:!*()x)"));        // Go's JSON
  CHECK(has(all, "p@ss/w0rd+&quot;&lt;&amp;&gt;&#39;\\=?;:!*()x"));        // HTML
  CHECK(has(all, "p@ss/w0rd+&quot;&lt;&amp;&gt;&#x27;\\=?;:!*()x"));
  CHECK(has(all, "p@ss/w0rd+&quot;&lt;&amp;&gt;'\\=?;:!*()x"));
  for (const std::string& s : all) {
    for (const char c : s) CHECK((c >= 0x21 && c <= 0x7e));  // what the scrubber's hold relies on
    CHECK(s.size() <= longest_spelling_bound(kSpecial.size()));
  }
  CHECK(percent_encode_all("a b/~") == "a%20b%2F~");
}

TEST_CASE("spellings: base64 of a longer text holding the value, at every offset, both alphabets, any padding") {
  for (const std::string& value : {kPlain, kSpecial, std::string("\x7e\x7e\x7e~~~~abcdefgh?>?>")}) {
    for (std::size_t before = 0; before < 7; ++before) {
      for (std::size_t after = 0; after < 4; ++after) {
        CAPTURE(value);
        CAPTURE(before);
        CAPTURE(after);
        const std::string text = std::string(before, '\xf1') + value + std::string(after, 'Z');
        for (const bool url : {false, true}) {
          for (const bool pad : {false, true}) CHECK(any_found(value, "x=" + reference_base64(text, url, pad) + ";"));
        }
        CHECK(any_found(value, "Basic " + reference_base64("user:" + value, false, true)));
      }
    }
  }
}

TEST_CASE("spellings: hex of a longer text, either case, at every offset") {
  for (std::size_t before = 0; before < 4; ++before) {
    const std::string text = std::string(before, 'q') + kSpecial;
    std::string lower, upper;
    for (const char c : text) {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(c));
      lower += buf;
      std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned char>(c));
      upper += buf;
    }
    CHECK(any_found(kSpecial, lower));
    CHECK(any_found(kSpecial, upper));
  }
}

TEST_CASE("spellings: the base64 interior drops exactly the characters the neighbours decide") {
  // filler 0: whole groups and the last full character; filler 1: the first two characters carry
  // filler bits; filler 2: the first three.
  const std::string value = "abcdefghijkl";  // 12 bytes
  CHECK(base64_interior(value, 0, Base64Alphabet::standard) == reference_base64(value, false, false));
  const std::string one = reference_base64(std::string(1, '\0') + value, false, false);
  CHECK(base64_interior(value, 1, Base64Alphabet::standard) == one.substr(2, one.size() - 2 - 1));
  const std::string two = reference_base64(std::string(2, '\0') + value, false, false);
  CHECK(base64_interior(value, 2, Base64Alphabet::standard) == two.substr(3, two.size() - 3 - 1));
  // A character changed next to the value never changes the interior: it is found whatever
  // precedes or follows.
  for (int c = 0; c < 256; c += 5) {
    const std::string around = std::string(1, static_cast<char>(c)) + value + std::string(1, static_cast<char>(c));
    CHECK(reference_base64(around, false, false).find(base64_interior(value, 1, Base64Alphabet::standard)) !=
          std::string::npos);
  }
  CHECK(base64_interior("a", 2, Base64Alphabet::url).size() == 1);  // 'a''s low six bits, whole
  CHECK(base64_interior("a", 1, Base64Alphabet::url).empty());      // no character all its own
}

TEST_CASE("spellings: none of another value's spellings found in a text of this one") {
  // One byte off kPlain, in the middle. (Off in the last byte only, base64 at some alignments
  // still matches: its interior holds only that byte's high bits, a documented few bits.)
  const std::string other = "sk_live_0123456789abCdefXYZ";
  CHECK_FALSE(any_found(kPlain, other));
  CHECK_FALSE(any_found(kPlain, reference_base64("user:" + other, false, true)));
}
