// SPDX-License-Identifier: Apache-2.0
// table/placeholder: a secret's stand-in (SPEC §19), swapped for the value where the endpoint may
// have it, and found in any spelling where it may not.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "table/placeholder.h"

using boxproxy::make_placeholder;
using boxproxy::placeholder_search_form;
using boxproxy::Placeholders;

namespace {

std::array<std::uint8_t, 16> bytes(std::uint8_t first) {
  std::array<std::uint8_t, 16> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(first + i * 17);
  return out;
}

// github's and npm's placeholders, and github's value (npm's not set).
struct Session {
  Placeholders placeholders;
  std::string github = make_placeholder("github", bytes(0));
  std::string npm = make_placeholder("npm_token", bytes(7));
  std::map<std::string, std::string> values{{"github", "ghp_REAL"}};

  Session() {
    placeholders.set("github", github);
    placeholders.set("npm_token", npm);
  }
  Placeholders::Swapped swap(std::string_view text, std::vector<std::string> allowed) const {
    return placeholders.swap(text, allowed, [this](const std::string& name) -> const std::string* {
      const auto found = values.find(name);
      return found == values.end() ? nullptr : &found->second;
    });
  }
};

}  // namespace

TEST_CASE("a placeholder is bxp_, the name, _, and 32 lower-case hex digits") {
  CHECK(make_placeholder("github", bytes(0)) == "bxp_github_00112233445566778899aabbccddeeff");
  std::array<std::uint8_t, 16> all_ff{};
  all_ff.fill(0xff);
  CHECK(make_placeholder("a_b", all_ff) == "bxp_a_b_" + std::string(32, 'f'));
}

TEST_CASE("the search form lower-cases and decodes %XX once") {
  CHECK(placeholder_search_form("BXP_%67ithub") == "bxp_github");
  CHECK(placeholder_search_form("%2541") == "%41");   // once: what an origin decoding once reads
  CHECK(placeholder_search_form("%4") == "%4");       // not a whole escape
  CHECK(placeholder_search_form("%zz%") == "%zz%");
  CHECK(placeholder_search_form("") == "");
}

TEST_CASE("swapping: an allowed name's placeholder becomes its value, every time it stands as made") {
  const Session s;
  const auto out = s.swap("Bearer " + s.github + " and " + s.github, {"github"});
  CHECK(out.text == "Bearer ghp_REAL and ghp_REAL");
  CHECK(out.missing.empty());
  // Another name's, not allowed here, is left as it is (find_misdirected refuses it).
  const auto other = s.swap(s.npm + "/" + s.github, {"github"});
  CHECK(other.text == s.npm + "/ghp_REAL");
  // Not as made (another case, encoded, cut short): not swapped.
  std::string upper = s.github;
  upper[0] = 'B';
  for (const std::string& text : {upper, "%62" + s.github.substr(1), s.github.substr(0, 20), std::string("bxp_")}) {
    CHECK(s.swap(text, {"github"}).text == text);
  }
  CHECK(s.swap("no placeholder", {"github"}).text == "no placeholder");
  CHECK(s.swap("", {"github"}).text.empty());
}

TEST_CASE("swapping a name whose value is not set: named once in missing, its placeholder kept") {
  const Session s;
  const auto out = s.swap(s.npm + "," + s.npm + "," + s.github, {"github", "npm_token"});
  CHECK(out.missing == std::vector<std::string>{"npm_token"});
  CHECK(out.text == s.npm + "," + s.npm + ",ghp_REAL");
}

TEST_CASE("finding: a placeholder where it may not go, in any spelling, names its secret") {
  const Session s;
  CHECK(s.placeholders.find_misdirected("x=" + s.github) == "github");
  CHECK(s.placeholders.find_misdirected("x=" + s.github, {"github"}) == std::nullopt);
  CHECK(s.placeholders.find_misdirected(s.github + s.npm, {"github"}) == "npm_token");
  std::string upper;
  for (const char c : s.github) upper.push_back(static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c));
  CHECK(s.placeholders.find_misdirected(upper) == "github");
  std::string encoded;
  for (const char c : s.github) encoded += "%" + std::string(1, "0123456789ABCDEF"[c >> 4]) + "0123456789abcdef"[c & 15];
  CHECK(s.placeholders.find_misdirected("/q?k=" + encoded) == "github");
  CHECK(s.placeholders.find_misdirected(s.github.substr(0, s.github.size() - 1)) == std::nullopt);
  CHECK(s.placeholders.find_misdirected("bxp_github_") == std::nullopt);
  CHECK(Placeholders{}.find_misdirected(s.github) == std::nullopt);
}

TEST_CASE("a name set again has its new placeholder only") {
  Session s;
  const std::string fresh = make_placeholder("github", bytes(3));
  s.placeholders.set("github", fresh);
  CHECK(*s.placeholders.of("github") == fresh);
  CHECK(s.placeholders.of("nope") == nullptr);
  CHECK(s.placeholders.find_misdirected(s.github) == std::nullopt);
  CHECK(s.placeholders.find_misdirected(fresh) == "github");
}

namespace {

// RFC 4648 base64, written here (not table/base64's), with the alphabet's last two characters.
std::string test_base64(std::string_view bytes, const char* last_two, bool pad) {
  const std::string table = std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") + last_two;
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : bytes) {
    bits = (bits << 8) | static_cast<unsigned char>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      out.push_back(table[(bits >> count) & 63]);
    }
  }
  if (count > 0) out.push_back(table[(bits << (6 - count)) & 63]);
  while (pad && out.size() % 4 != 0) out.push_back('=');
  return out;
}

std::string percent_all(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out += '%';
    out += "0123456789ABCDEF"[static_cast<unsigned char>(c) >> 4];
    out += "0123456789ABCDEF"[c & 15];
  }
  return out;
}

}  // namespace

TEST_CASE("percent-decoding until nothing changes, in one pass") {
  CHECK(boxproxy::percent_decode_fully("%2541") == "A");
  CHECK(boxproxy::percent_decode_fully("%252541") == "A");
  CHECK(boxproxy::percent_decode_fully("%%2541") == "%A");
  CHECK(boxproxy::percent_decode_fully("%4") == "%4");
  CHECK(boxproxy::percent_decode_fully("%zz%") == "%zz%");
  CHECK(boxproxy::percent_decode_fully("%2%341") == "$1");  // "%34" is "4", then "%24" is "$"
  CHECK(boxproxy::percent_decode_fully(std::string(20000, '%') + "41") == std::string(19999, '%') + "A");
}

TEST_CASE("finding: percent-encoded any number of times over, and in any case") {
  const Session s;
  std::string text = s.github;
  for (int times = 0; times < 5; ++times) {
    CAPTURE(times);
    CHECK(s.placeholders.find_misdirected("/q?k=" + text + "&x") == "github");
    text = percent_all(text);
  }
  std::string mixed = percent_all(s.github);
  for (char& c : mixed) c = static_cast<char>(c >= 'A' && c <= 'F' ? c + 32 : c);  // lower-case hex
  CHECK(s.placeholders.find_misdirected(mixed) == "github");
}

TEST_CASE("finding: inside Basic credentials and base64 of any text holding it, both alphabets, every offset") {
  const Session s;
  for (std::size_t before = 0; before < 6; ++before) {
    for (std::size_t after = 0; after < 4; ++after) {
      for (const char* last_two : {"+/", "-_"}) {
        for (const bool pad : {false, true}) {
          const std::string text = std::string(before, '\xfb') + s.github + std::string(after, '?');
          CAPTURE(before);
          CAPTURE(after);
          CAPTURE(last_two);
          CHECK(s.placeholders.find_misdirected("x-token: " + test_base64(text, last_two, pad)) == "github");
          CHECK(s.placeholders.find_misdirected("q=" + test_base64(text, last_two, pad), {"npm_token"}) == "github");
        }
      }
    }
  }
  CHECK(s.placeholders.find_misdirected("Basic " + test_base64("git:" + s.npm, "+/", true)) == "npm_token");
  CHECK(s.placeholders.find_misdirected("Basic " + test_base64(s.npm + ":x-oauth-basic", "+/", true)) == "npm_token");
  // The base64 itself percent-encoded (a query value), or base64 of an encoded or upper-cased
  // placeholder, or base64 of base64: still found.
  CHECK(s.placeholders.find_misdirected(percent_all(test_base64("u:" + s.github, "+/", true))) == "github");
  CHECK(s.placeholders.find_misdirected(test_base64("u:" + percent_all(s.github), "+/", true)) == "github");
  std::string upper = s.github;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  CHECK(s.placeholders.find_misdirected(test_base64("{\"k\":\"" + upper + "\"}", "-_", false)) == "github");
  CHECK(s.placeholders.find_misdirected(test_base64(test_base64("u:" + s.github, "+/", true), "+/", true)) ==
        "github");
  // Base64 of text without it, or of a cut one: nothing.
  CHECK(s.placeholders.find_misdirected(test_base64("u:" + s.github.substr(0, 30), "+/", true)) == std::nullopt);
  CHECK(s.placeholders.find_misdirected("Basic " + test_base64("user:password", "+/", true)) == std::nullopt);
}

TEST_CASE("finding: linear, even on a head-sized text of nested escapes and base64") {
  const Session s;
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "%25%25" + test_base64("abcdefghijklmnopqrstuvwxyz0123456789", "+/", true) + " ";
  CHECK(s.placeholders.find_misdirected(big) == std::nullopt);
  CHECK(s.placeholders.find_misdirected(big + test_base64(s.github, "+/", true)) == "github");
}
