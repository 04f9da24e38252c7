// SPDX-License-Identifier: Apache-2.0
// table/path_glob: every glob form of SPEC §18, valid and not, and what each matches.
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/path_glob.h"

using namespace boxproxy;

namespace {

PathGlob glob(std::string_view text) {
  auto parsed = PathGlob::parse(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) FAIL(text << ": " << *error);
  return std::get<PathGlob>(parsed);
}

std::string error_of(std::string_view text) {
  auto parsed = PathGlob::parse(text);
  REQUIRE_MESSAGE(std::holds_alternative<std::string>(parsed), text);
  return std::get<std::string>(parsed);
}

// Whether `pattern` matches the request target `target` (which must be a sound path).
bool matches(std::string_view pattern, std::string_view target) {
  auto judged = judge_request_path(target);
  REQUIRE_MESSAGE(std::holds_alternative<PathSegments>(judged), target);
  return glob(pattern).matches(std::get<PathSegments>(judged));
}

}  // namespace

TEST_CASE("literal globs match their path and only it") {
  CHECK(matches("/", "/"));
  CHECK(matches("/", "/?q"));
  CHECK_FALSE(matches("/", "/a"));
  CHECK(matches("/user", "/user"));
  CHECK(matches("/user", "/user/"));   // a trailing '/' is not a segment, on either side
  CHECK(matches("/user/", "/user"));
  CHECK(matches("/user", "/user?x=/admin"));
  CHECK_FALSE(matches("/user", "/User"));  // paths are case-sensitive
  CHECK_FALSE(matches("/user", "/users"));
  CHECK_FALSE(matches("/user", "/user/x"));
  CHECK_FALSE(matches("/user/x", "/user"));
  CHECK(matches("/a/b/c", "/a/b/c"));
}

TEST_CASE("globs and paths are normalised alike") {
  CHECK(matches("/secrets", "/%73ecrets"));
  CHECK(matches("/%73ecrets", "/secrets"));
  CHECK(matches("/a%3fb", "/a%3Fb"));
  CHECK(matches("/a%3Fb", "/a%3fb"));
  CHECK_FALSE(matches("/a%20b", "/a+b"));
  CHECK(matches("/caf%C3%A9", "/caf%c3%a9"));
}

TEST_CASE("'*' as a whole segment matches any one segment") {
  CHECK(matches("/repos/*", "/repos/acme"));
  CHECK(matches("/repos/*/issues", "/repos/acme/issues"));
  CHECK_FALSE(matches("/repos/*", "/repos"));
  CHECK_FALSE(matches("/repos/*", "/repos/acme/widget"));
  CHECK_FALSE(matches("/repos/*/issues", "/repos/acme/widget/issues"));
  CHECK(matches("/*", "/x"));
  CHECK_FALSE(matches("/*", "/"));
  CHECK(matches("/*/*", "/a/b"));
}

TEST_CASE("'*' inside a segment matches within it, never across a '/'") {
  CHECK(matches("/v1/*.json", "/v1/data.json"));
  CHECK(matches("/v1/*.json", "/v1/.json"));
  CHECK_FALSE(matches("/v1/*.json", "/v1/data.xml"));
  CHECK_FALSE(matches("/v1/*.json", "/v1/a/b.json"));
  CHECK_FALSE(matches("/v1/*.json", "/v1/data.json/x"));
  CHECK(matches("/v*", "/v1"));
  CHECK(matches("/v*", "/v"));
  CHECK_FALSE(matches("/v*", "/x1"));
  CHECK(matches("/a*b*c", "/abc"));
  CHECK(matches("/a*b*c", "/aXbYbZc"));
  CHECK_FALSE(matches("/a*b*c", "/acb"));
  CHECK_FALSE(matches("/a*b*c", "/abcX"));
  CHECK(matches("/*a*", "/bab"));
  CHECK_FALSE(matches("/ab*ba", "/aba"));  // prefix and suffix may not overlap
  CHECK(matches("/ab*ba", "/abba"));
}

TEST_CASE("'**' matches one or more whole segments, never none") {
  CHECK(matches("/repos/acme/**", "/repos/acme/widget"));
  CHECK(matches("/repos/acme/**", "/repos/acme/widget/issues/1"));
  CHECK_FALSE(matches("/repos/acme/**", "/repos/acme"));
  CHECK_FALSE(matches("/repos/acme/**", "/repos/acme/"));
  CHECK_FALSE(matches("/repos/acme/**", "/repos/acmeX/widget"));
  CHECK_FALSE(matches("/repos/acme/**", "/repos/other/widget"));
  CHECK(matches("/**", "/a"));
  CHECK(matches("/**", "/a/b/c"));
  CHECK_FALSE(matches("/**", "/"));
  CHECK(matches("/**/issues", "/a/issues"));
  CHECK(matches("/**/issues", "/a/b/issues"));
  CHECK_FALSE(matches("/**/issues", "/issues"));
  CHECK_FALSE(matches("/**/issues", "/a/issues/x"));
  CHECK(matches("/a/**/b/**", "/a/x/b/y"));
  CHECK(matches("/a/**/b/**", "/a/x/b/b/b/y/z"));
  CHECK_FALSE(matches("/a/**/b/**", "/a/x/b"));
  CHECK_FALSE(matches("/a/**/b/**", "/a/b/y"));
  CHECK(matches("/**/**", "/a/b"));
  CHECK_FALSE(matches("/**/**", "/a"));
  CHECK(matches("/**/*.json", "/v1/x/data.json"));
  CHECK_FALSE(matches("/**/*.json", "/data.json"));
  CHECK(matches("/a/**/c/d", "/a/c/c/d"));   // the "**" must grow past a first false match
  CHECK(matches("/a/**/c/d", "/a/x/c/y/c/d"));
}

TEST_CASE("a long path with many '**' is matched without blowing up") {
  std::string target;
  for (int i = 0; i < 2000; ++i) target += "/a";
  std::string pattern;
  for (int i = 0; i < 50; ++i) pattern += "/**";
  pattern += "/b";
  CHECK_FALSE(matches(pattern, target));
  CHECK(matches(pattern.substr(0, pattern.size() - 2) + "/a", target));
}

TEST_CASE("bad globs are errors naming the glob and the fault") {
  struct Row {
    const char* text;
    const char* says;
  };
  const Row rows[] = {
      {"", "starts with '/'"},
      {"repos/*", "starts with '/'"},
      {"*", "starts with '/'"},
      {"**", "starts with '/'"},
      {"/a?b", "'?'"},
      {"/a/*?", "'?'"},
      {"/a**", "'**' stands only as a whole segment"},
      {"/**a", "'**' stands only as a whole segment"},
      {"/a/***", "'**' stands only as a whole segment"},
      {"/a/b**c/d", "'**' stands only as a whole segment"},
      {"//", "empty segment"},
      {"//a", "empty segment"},
      {"/a//b", "empty segment"},
      {"/a//", "empty segment"},
      {"/.", "\".\" or \"..\""},
      {"/a/..", "\".\" or \"..\""},
      {"/a/%2e%2E/b", "\".\" or \"..\""},
      {"/a/..;/b", "\".\" or \"..\""},  // no judged path holds a segment like these (SPEC §19a)
      {"/a/.;x", "\".\" or \"..\""},
      {"/a/%2E%2E;x*", "\".\" or \"..\""},
      {"/;x", "only ';'-parameters"},
      {"/a/;*", "only ';'-parameters"},
      {"/a%2Fb", "%2F"},
      {"/a%2fb", "%2F"},
      {"/a%5cb", "%5C"},
      {"/a%5Cb", "%5C"},
      {"/a%00", "%00"},
      {"/a\\b", "'\\'"},
      {"/a%", "'%'"},
      {"/a%zz", "'%'"},
      {"/a*%4", "'%'"},
      {"/a b", "character"},
      {"/a#b", "character"},
      {"/caf\xc3\xa9", "character"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const std::string error = error_of(row.text);
    CAPTURE(error);
    CHECK(error.find(row.says) != std::string::npos);
    CHECK(error.rfind("\"" + std::string(row.text) + "\": ", 0) == 0);
  }
}

TEST_CASE("a glob keeps its text as given") {
  CHECK(glob("/Repos/%73/**/").text() == "/Repos/%73/**/");
  CHECK(glob("/a/*") == glob("/a/*"));
  CHECK_FALSE(glob("/a/*") == glob("/a/**"));
  // Dots inside a pattern are not dot segments.
  CHECK(matches("/*.", "/a."));
  CHECK(matches("/.*", "/.git"));
  CHECK(matches("/..*", "/..x"));
}

TEST_CASE("a glob segment with a ';' past its head, or a '*' before it, is a glob like any other") {
  CHECK(matches("/a;x", "/a;x"));
  CHECK_FALSE(matches("/a;x", "/a"));
  CHECK(matches("/*;v=1", "/a;v=1"));
  CHECK(matches("/a/*;*/b", "/a/c;d/b"));
  CHECK(matches("/..x;y", "/..x;y"));
}

TEST_CASE("\"case\": insensitive compares ASCII letters without case, on both sides") {
  struct Row {
    const char* pattern;
    const char* target;
    bool sensitive;
    bool insensitive;
  };
  const Row rows[] = {
      {"/admin", "/admin", true, true},
      {"/admin", "/ADMIN", false, true},
      {"/Admin", "/aDMIN", false, true},
      {"/ADMIN/**", "/admin/x/Y", false, true},
      {"/v1/*.JSON", "/v1/a.json", false, true},
      {"/v1/*.json", "/V1/A.Json", false, true},
      {"/a%3fb", "/A%3Fb", false, true},   // percent-encodings are one octet in either case already
      {"/a%3Fb", "/a%3fb", true, true},
      {"/%41", "/a", false, true},         // %41 is "A", decoded (unreserved)
      {"/a", "/b", false, false},
      {"/a/**", "/A", false, false},       // "**" still needs a segment
  };
  for (const Row& row : rows) {
    CAPTURE(row.pattern);
    CAPTURE(row.target);
    auto judged = judge_request_path(row.target);
    REQUIRE(std::holds_alternative<PathSegments>(judged));
    const PathSegments& segments = std::get<PathSegments>(judged);
    CHECK(glob(row.pattern).matches(segments) == row.sensitive);
    CHECK(glob(row.pattern).matches(segments, PathCase::sensitive) == row.sensitive);
    CHECK(glob(row.pattern).matches(fold_case(segments), PathCase::insensitive) == row.insensitive);
  }
  CHECK(glob("/Repos/**").text() == "/Repos/**");  // the text stays as given
  CHECK(fold_case(PathSegments{"AbC", "%3F"}) == PathSegments{"abc", "%3f"});
}
