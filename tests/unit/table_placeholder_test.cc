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
