// SPDX-License-Identifier: Apache-2.0
// A request's path as the rules of an inspected endpoint see it (SPEC §18, "bad path").
//
// An origin server decodes, splits and normalises a path its own way; a rule that matched the
// text the box sent while the origin read another path would be no rule. So a path is judged
// before any rule looks at it, and every form two readers could read differently is refused as
// `bad path`: what is left is one path, split into segments, that the rules and the origin read
// alike (as far as the origin follows RFC 3986; see the manual for what it cannot promise).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace boxproxy {

// Why a path is `bad path`. Each value names one form the rules refuse to guess about.
enum class PathFault : std::uint8_t {
  not_origin_form,    // the target does not start with '/' ("*", "https://h/x", "x")
  encoded_slash,      // %2F in any case: a '/' the origin may or may not split on
  encoded_backslash,  // %5C in any case: a '\' some origins read as '/'
  encoded_nul,        // %00: ends the path early in a C origin
  backslash,          // a raw '\', which some origins read as '/'
  empty_segment,      // "//": some origins merge it, some do not
  dot_segment,        // "." or "..", also once decoded ("%2e%2E") and before a ';' ("..;x"): the
                      // origin would climb
  bare_parameters,    // a segment that is only ';'-parameters ("/;x/a"): once they are removed,
                      // as a servlet container removes them, an empty segment some origins merge
  bad_percent,        // '%' not followed by two hex digits
  bad_character,      // a byte RFC 3986 allows in no path (a space, '#', '"', a control, >= 0x80)
};

// The words of a fault, for messages: "holds %2F (an encoded '/')".
[[nodiscard]] std::string_view path_fault_words(PathFault fault) noexcept;

// A path's segments, normalised: unreserved characters decoded, every other percent-encoding
// kept with upper-case hex digits. Never an empty segment, never "." or "..". "/" has none.
using PathSegments = std::vector<std::string>;

// Text of a segment (or a piece of one) normalised as above, with no check of what it makes:
// the fault when it holds a '\', a bad or refused percent-encoding or a bad character. A glob's
// literal pieces go through it too, so both sides of a match are spelled alike.
[[nodiscard]] std::variant<std::string, PathFault> normalise_path_text(std::string_view text);

// One segment as written (between two '/', without them): normalise_path_text, then an empty
// segment, a "." or ".." (once decoded), and a segment whose part before its first ';' is "." or
// ".." (dot_segment) or empty (bare_parameters) are faults (SPEC §19a: "/a/..;/b" is "/b" to a
// servlet container, which drops each segment's ';'-parameters before it resolves dot segments).
[[nodiscard]] std::variant<std::string, PathFault> normalise_segment(std::string_view text);

// The part of a normalised segment before its first ';' (all of it when it has none): what an
// origin that drops ';'-parameters reads. A ';' is a raw one only: an encoded one stays "%3B" in a
// normalised segment, data to every reader.
[[nodiscard]] std::string_view segment_without_parameters(std::string_view segment) noexcept;

// The path with every segment's ';'-parameters removed (SPEC §19a): "/a;x/b;y=1" is "/a/b". Of a
// judged path, never an empty segment (judge_request_path refused those).
[[nodiscard]] PathSegments without_parameters(const PathSegments& segments);

// Whether any segment holds a ';' (so that without_parameters would change it).
[[nodiscard]] bool has_parameters(const PathSegments& segments) noexcept;

// Judges a request target: origin-form only; the query (from the first '?') is cut off and
// neither matched nor checked; then each segment through normalise_segment. One trailing '/' is
// not a segment ("/a/" is judged as "/a", so a rule about "/a" also covers "/a/"); any other
// empty segment is a fault.
[[nodiscard]] std::variant<PathSegments, PathFault> judge_request_path(std::string_view target);

}  // namespace boxproxy
