// SPDX-License-Identifier: Apache-2.0
// A rule's path pattern (SPEC §18, "Paths"): "/repos/acme/**", "/v1/*.json", "/user".
//
//   - it starts with '/'; segments are split on '/' as a request path's are (table/request_path.h),
//     and its literal text is normalised as a path's is, so "/%73ecrets" and "/secrets" are one glob;
//   - "*" as a whole segment matches any one segment; inside a segment ("*.json", "v*") each '*'
//     matches any run of characters within that segment, never a '/';
//   - "**" as a whole segment matches one or more segments, so "/repos/acme/**" does not match
//     "/repos/acme" itself; "**" anywhere else ("a**", "***") is an error;
//   - one trailing '/' is dropped, as a path's is ("/a/" is "/a"); "/" matches "/" alone;
//   - an error, naming the glob and what is wrong: no leading '/', a '?' (the query is never
//     matched), an empty segment, a "." or ".." segment, or one whose part before a ';' is "." or
//     ".." or empty (no judged path holds one), and whatever a path may not hold (a '\', %2F, %5C,
//     %00, a bad '%', a character outside RFC 3986's paths);
//   - matched with or without regard to ASCII case, as the endpoint says (SPEC §19a "case").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "table/request_path.h"

namespace boxproxy {

// How an endpoint's rules compare paths (SPEC §19a, the endpoint's "case"). Percent-encodings are
// already upper-case in a normalised path (table/request_path.h), so folding never splits one
// octet into two spellings.
enum class PathCase : std::uint8_t {
  sensitive,    // "/Admin" and "/admin" are two paths (RFC 3986 §6.2.2.1: a path is case-sensitive)
  insensitive,  // ASCII letters compared without case, for origins that fold them (IIS, many S3-likes)
};

// `segments` with every ASCII letter lower-cased, as PathGlob::matches takes them under
// PathCase::insensitive.
[[nodiscard]] PathSegments fold_case(const PathSegments& segments);

class PathGlob {
 public:
  // The glob `text`, or a message naming it and what is wrong ("\"/a**\": '**' stands only ...").
  [[nodiscard]] static std::variant<PathGlob, std::string> parse(std::string_view text);

  // Whether a judged path (judge_request_path's segments) matches. Linear in the path's segments
  // times the glob's at worst; no recursion, whatever the input. Under PathCase::insensitive the
  // glob is compared lower-cased, and `segments` must be fold_case's (folded once by the caller,
  // not once for every rule).
  [[nodiscard]] bool matches(const PathSegments& segments, PathCase path_case = PathCase::sensitive) const;

  // The glob as it was given, for --check-config and messages.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

  friend bool operator==(const PathGlob& a, const PathGlob& b) noexcept { return a.text_ == b.text_; }

 private:
  struct Part {
    bool any_segments = false;         // "**": one or more whole segments
    std::vector<std::string> pieces;   // otherwise: the segment's text between its '*'s, normalised
                                       // (one piece: a literal segment; "*" alone: two empty pieces)
  };

  [[nodiscard]] static bool segment_matches(const Part& part, std::string_view segment);
  [[nodiscard]] static bool parts_match(const std::vector<Part>& parts, const PathSegments& segments);

  std::string text_;
  std::vector<Part> parts_;
  std::vector<Part> folded_parts_;  // parts_ lower-cased, for PathCase::insensitive
};

}  // namespace boxproxy
