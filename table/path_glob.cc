// SPDX-License-Identifier: Apache-2.0
#include "table/path_glob.h"

#include <fmt/format.h>

#include "table/ascii.h"

namespace boxproxy {
namespace {

// "\"TEXT\": WHY", the glob quoted so that a message shows where it starts and ends.
std::string glob_error(std::string_view text, std::string_view why) { return fmt::format("\"{}\": {}", text, why); }

// Whether a glob segment's part before a ';' is one no judged path holds (normalise_segment's
// dot_segment and bare_parameters): known only when the first piece (before any '*') holds the ';'
// or the segment has no '*' at all.
bool dead_parameter_head(const std::vector<std::string>& pieces) {
  const std::string& first = pieces.front();
  const std::size_t semicolon = first.find(';');
  if (semicolon == std::string::npos && pieces.size() > 1) return false;
  const std::string_view head = std::string_view(first).substr(0, semicolon);
  return head == "." || head == ".." || (head.empty() && semicolon != std::string::npos);
}

}  // namespace

PathSegments fold_case(const PathSegments& segments) {
  PathSegments out;
  out.reserve(segments.size());
  for (const std::string& segment : segments) out.push_back(ascii_lower(segment));
  return out;
}

std::variant<PathGlob, std::string> PathGlob::parse(std::string_view text) {
  if (text.empty() || text.front() != '/') return glob_error(text, "a glob starts with '/'");
  // A '?' would read as the start of a query, which no rule ever sees: a glob holding one could
  // never match what its writer meant.
  if (text.find('?') != std::string_view::npos) {
    return glob_error(text, "holds a '?' (rules match the path; the query is never matched)");
  }
  PathGlob glob;
  glob.text_ = std::string(text);
  std::string_view path = text.substr(1);
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);  // as a request path's
  if (path.empty()) return glob;                                        // "/"
  for (;;) {
    const std::size_t slash = path.find('/');
    const std::string_view segment = path.substr(0, slash);
    if (segment.empty()) return glob_error(text, "holds an empty segment (\"//\")");
    Part part;
    if (segment == "**") {
      part.any_segments = true;
    } else if (segment.find("**") != std::string_view::npos) {
      return glob_error(text, "'**' stands only as a whole segment (/a/**/b); '*' matches within one");
    } else {
      std::size_t start = 0;
      for (;;) {
        const std::size_t star = segment.find('*', start);
        auto piece = normalise_path_text(segment.substr(start, star - start));
        if (const auto* fault = std::get_if<PathFault>(&piece)) return glob_error(text, path_fault_words(*fault));
        part.pieces.push_back(std::get<std::string>(std::move(piece)));
        if (star == std::string_view::npos) break;
        start = star + 1;
      }
      // No judged path holds "." or "..", nor a segment whose part before ';' is one or empty:
      // a glob segment that is one could never match.
      if (part.pieces.size() == 1 && (part.pieces[0] == "." || part.pieces[0] == "..")) {
        return glob_error(text, path_fault_words(PathFault::dot_segment));
      }
      if (dead_parameter_head(part.pieces)) {
        const bool dots = segment_without_parameters(part.pieces.front()).starts_with('.');
        return glob_error(text, path_fault_words(dots ? PathFault::dot_segment : PathFault::bare_parameters));
      }
    }
    glob.parts_.push_back(std::move(part));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  glob.folded_parts_ = glob.parts_;
  for (Part& part : glob.folded_parts_) {
    for (std::string& piece : part.pieces) piece = ascii_lower(piece);
  }
  return glob;
}

bool PathGlob::segment_matches(const Part& part, std::string_view segment) {
  const std::vector<std::string>& pieces = part.pieces;
  if (pieces.size() == 1) return segment == pieces.front();
  // Stars between the pieces: the first piece is a prefix, the last a suffix, and the ones between
  // are found in order, each at its leftmost place (leftmost is never worse for what follows).
  const std::string& first = pieces.front();
  const std::string& last = pieces.back();
  if (segment.size() < first.size() + last.size()) return false;
  if (!segment.starts_with(first) || !segment.ends_with(last)) return false;
  std::string_view middle = segment.substr(first.size(), segment.size() - first.size() - last.size());
  for (std::size_t i = 1; i + 1 < pieces.size(); ++i) {
    const std::size_t at = middle.find(pieces[i]);
    if (at == std::string_view::npos) return false;
    middle.remove_prefix(at + pieces[i].size());
  }
  return true;
}

bool PathGlob::matches(const PathSegments& segments, PathCase path_case) const {
  return parts_match(path_case == PathCase::insensitive ? folded_parts_ : parts_, segments);
}

bool PathGlob::parts_match(const std::vector<Part>& parts, const PathSegments& segments) {
  // Wildcard matching with one backtrack point, as for '*' in a string, over segments: "**" takes
  // one segment at once and then grows one at a time when what follows it fails (only the last
  // "**" ever needs to grow: an earlier one growing could only leave less for the parts after).
  const std::size_t n = segments.size();
  std::size_t g = 0;
  std::size_t p = 0;
  bool have_star = false;
  std::size_t star_part = 0;  // the last "**" met
  std::size_t star_end = 0;   // the segments it has taken end here
  while (p < n) {
    if (g < parts.size() && parts[g].any_segments) {
      have_star = true;
      star_part = g;
      star_end = p + 1;
      g = g + 1;
      p = star_end;
    } else if (g < parts.size() && segment_matches(parts[g], segments[p])) {
      ++g;
      ++p;
    } else if (have_star) {
      ++star_end;
      g = star_part + 1;
      p = star_end;
    } else {
      return false;
    }
  }
  // Every segment is taken; what is left of the glob must need none, and each part needs one.
  return g == parts.size();
}

}  // namespace boxproxy
