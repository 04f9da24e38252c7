// SPDX-License-Identifier: Apache-2.0
// table/request_path: what a request path is to the rules, and every `bad path` form of SPEC §18.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/request_path.h"

using namespace boxproxy;

namespace {

PathSegments segments_of(std::string_view target) {
  auto judged = judge_request_path(target);
  if (const auto* fault = std::get_if<PathFault>(&judged)) {
    FAIL(target << ": refused: " << path_fault_words(*fault));
  }
  return std::get<PathSegments>(judged);
}

PathFault fault_of(std::string_view target) {
  auto judged = judge_request_path(target);
  REQUIRE_MESSAGE(std::holds_alternative<PathFault>(judged), target);
  return std::get<PathFault>(judged);
}

// The same text with every letter of its percent-encodings in the other case.
std::string other_case(std::string text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%' || i + 2 >= text.size()) continue;
    for (std::size_t j = i + 1; j <= i + 2; ++j) {
      char& c = text[j];
      if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
      else if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return text;
}

}  // namespace

TEST_CASE("sound paths: split into segments, the query cut off and never looked at") {
  struct Row {
    const char* target;
    std::vector<std::string> segments;
  };
  const Row rows[] = {
      {"/", {}},
      {"/?q=1", {}},
      {"/a", {"a"}},
      {"/a/", {"a"}},  // one trailing '/' is not a segment
      {"/repos/acme/widget", {"repos", "acme", "widget"}},
      {"/repos/acme/widget/", {"repos", "acme", "widget"}},
      {"/v1/data.json?x=%2F..//\\%00#frag", {"v1", "data.json"}},  // the query is neither matched nor checked
      {"/a?", {"a"}},
      {"/~user/.hidden/..x/x..", {"~user", ".hidden", "..x", "x.."}},
      {"/a:b@c/!$&'()*+,;=", {"a:b@c", "!$&'()*+,;="}},
      {"/A/B", {"A", "B"}},  // case is kept: paths are case-sensitive
  };
  for (const Row& row : rows) {
    CAPTURE(row.target);
    CHECK(segments_of(row.target) == row.segments);
  }
}

TEST_CASE("unreserved characters are decoded, every other encoding kept with upper-case hex") {
  struct Row {
    const char* target;
    std::vector<std::string> segments;
  };
  const Row rows[] = {
      {"/%73ecrets", {"secrets"}},
      {"/%53ECRETS", {"SECRETS"}},
      {"/a%2db%2Ec%5fd%7ee", {"a-b.c_d~e"}},
      {"/%41%5a%61%7a%30%39", {"AZaz09"}},
      {"/a%20b", {"a%20b"}},
      {"/a%3fb", {"a%3Fb"}},  // an encoded '?' is data inside the segment, never the query
      {"/a%3Fb", {"a%3Fb"}},
      {"/a%23b", {"a%23b"}},
      {"/a%25b", {"a%25b"}},  // "%25" is a '%': kept, so it is never decoded twice
      {"/caf%c3%a9", {"caf%C3%A9"}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.target);
    CHECK(segments_of(row.target) == row.segments);
    CHECK(segments_of(other_case(row.target)) == row.segments);
  }
}

TEST_CASE("every bad path form, with its percent-encodings in either case") {
  struct Row {
    const char* target;
    PathFault fault;
  };
  const Row rows[] = {
      {"", PathFault::not_origin_form},
      {"*", PathFault::not_origin_form},
      {"a/b", PathFault::not_origin_form},
      {"https://example.com/a", PathFault::not_origin_form},
      {"?q", PathFault::not_origin_form},
      {"/a%2Fb", PathFault::encoded_slash},
      {"/a%2fb", PathFault::encoded_slash},
      {"/%2F", PathFault::encoded_slash},
      {"/a%5Cb", PathFault::encoded_backslash},
      {"/a%5cb", PathFault::encoded_backslash},
      {"/a%00", PathFault::encoded_nul},
      {"/%00/b", PathFault::encoded_nul},
      {"/a\\b", PathFault::backslash},
      {"\\a", PathFault::not_origin_form},
      {"/a\\..\\b", PathFault::backslash},
      {"//", PathFault::empty_segment},
      {"//a", PathFault::empty_segment},
      {"/a//b", PathFault::empty_segment},
      {"/a//", PathFault::empty_segment},
      {"///", PathFault::empty_segment},
      {"/.", PathFault::dot_segment},
      {"/..", PathFault::dot_segment},
      {"/a/./b", PathFault::dot_segment},
      {"/a/../b", PathFault::dot_segment},
      {"/a/..", PathFault::dot_segment},
      {"/a/../", PathFault::dot_segment},
      {"/%2e", PathFault::dot_segment},
      {"/%2E", PathFault::dot_segment},
      {"/%2e%2e", PathFault::dot_segment},
      {"/%2E%2e/secrets", PathFault::dot_segment},
      {"/.%2e", PathFault::dot_segment},
      {"/%2e.", PathFault::dot_segment},
      {"/a/%2e%2E/", PathFault::dot_segment},
      // SPEC §19a: the part before a ';' is what a servlet container resolves.
      {"/.;", PathFault::dot_segment},
      {"/..;", PathFault::dot_segment},
      {"/allowed/..;/other", PathFault::dot_segment},
      {"/allowed/.;x/other", PathFault::dot_segment},
      {"/a/..;x=1;y", PathFault::dot_segment},
      {"/a/%2e%2e;x/b", PathFault::dot_segment},
      {"/a/.%2E;/b", PathFault::dot_segment},
      {"/a/..;/", PathFault::dot_segment},
      {"/;", PathFault::bare_parameters},
      {"/;x", PathFault::bare_parameters},
      {"/;jsessionid=1/a", PathFault::bare_parameters},
      {"/a/;x/b", PathFault::bare_parameters},
      {"/a/;/", PathFault::bare_parameters},
      {"/a%", PathFault::bad_percent},
      {"/a%4", PathFault::bad_percent},
      {"/a%4g", PathFault::bad_percent},
      {"/a%g4", PathFault::bad_percent},
      {"/%%41", PathFault::bad_percent},
      {"/a b", PathFault::bad_character},
      {"/a#b", PathFault::bad_character},  // some origins cut the path at '#'
      {"/a\"b", PathFault::bad_character},
      {"/a<b>", PathFault::bad_character},
      {"/a{b}", PathFault::bad_character},
      {"/a|b", PathFault::bad_character},
      {"/a^b", PathFault::bad_character},
      {"/a`b", PathFault::bad_character},
      {"/a[b]", PathFault::bad_character},
      {"/a\tb", PathFault::bad_character},
      {"/a\x7f", PathFault::bad_character},
      {"/caf\xc3\xa9", PathFault::bad_character},
  };
  for (const Row& row : rows) {
    CAPTURE(row.target);
    CHECK(fault_of(row.target) == row.fault);
    CHECK(fault_of(other_case(row.target)) == row.fault);
  }
  CHECK(fault_of(std::string_view("/a\0b", 4)) == PathFault::bad_character);
}

TEST_CASE("a fault's words say what it is") {
  for (const PathFault fault : {PathFault::not_origin_form, PathFault::encoded_slash, PathFault::encoded_backslash,
                                PathFault::encoded_nul, PathFault::backslash, PathFault::empty_segment,
                                PathFault::dot_segment, PathFault::bare_parameters, PathFault::bad_percent,
                                PathFault::bad_character}) {
    CHECK_FALSE(path_fault_words(fault).empty());
  }
  CHECK(path_fault_words(PathFault::encoded_slash).find("%2F") != std::string_view::npos);
}

TEST_CASE("normalise_path_text keeps dots and empties for a glob's pieces; normalise_segment does not") {
  CHECK(std::get<std::string>(normalise_path_text("")).empty());
  CHECK(std::get<std::string>(normalise_path_text(".")) == ".");
  CHECK(std::get<std::string>(normalise_path_text("%2E")) == ".");
  CHECK(std::get<PathFault>(normalise_segment("")) == PathFault::empty_segment);
  CHECK(std::get<PathFault>(normalise_segment("%2E")) == PathFault::dot_segment);
  CHECK(std::get<PathFault>(normalise_path_text("a/b")) == PathFault::bad_character);
}

TEST_CASE("';'-parameters: kept in the path as sent, removed in its second reading") {
  struct Row {
    const char* target;
    std::vector<std::string> as_sent;
    std::vector<std::string> bare;
  };
  const Row rows[] = {
      {"/a/b", {"a", "b"}, {"a", "b"}},
      {"/allowed/secret;x/k", {"allowed", "secret;x", "k"}, {"allowed", "secret", "k"}},
      {"/a;x=1;y=2/b;", {"a;x=1;y=2", "b;"}, {"a", "b"}},
      {"/a;/b", {"a;", "b"}, {"a", "b"}},
      {"/a...;x", {"a...;x"}, {"a..."}},          // only "." and ".." climb
      {"/..a;x", {"..a;x"}, {"..a"}},
      {"/a%3Bx/b", {"a%3Bx", "b"}, {"a%3Bx", "b"}},  // an encoded ';' is data to every reader
      {"/a%3bx", {"a%3Bx"}, {"a%3Bx"}},
      {"/a;%2e%2e", {"a;..", }, {"a"}},             // dots after the ';' are the parameter's
      {"/a;x?q=;..", {"a;x"}, {"a"}},                // the query is not the path
  };
  for (const Row& row : rows) {
    CAPTURE(row.target);
    const PathSegments sent = segments_of(row.target);
    CHECK(sent == row.as_sent);
    CHECK(without_parameters(sent) == row.bare);
    CHECK(has_parameters(sent) == (row.as_sent != row.bare));
  }
  CHECK(segment_without_parameters("a;b;c") == "a");
  CHECK(segment_without_parameters("abc") == "abc");
  CHECK(segment_without_parameters(";") == "");
  CHECK(without_parameters(PathSegments{}).empty());
  CHECK(std::get<PathFault>(normalise_segment("..;x")) == PathFault::dot_segment);
  CHECK(std::get<PathFault>(normalise_segment(";x")) == PathFault::bare_parameters);
}
