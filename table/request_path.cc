// SPDX-License-Identifier: Apache-2.0
#include "table/request_path.h"

#include "table/ascii.h"

namespace boxproxy {
namespace {

// RFC 3986 §2.3: a percent-encoding of one of these is the character itself, to every reader.
constexpr bool is_unreserved(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// RFC 3986 §3.3 pchar, less pct-encoded (read apart): unreserved, sub-delims, ':' and '@'.
constexpr bool is_path_char(char c) noexcept {
  switch (c) {
    case '!': case '$': case '&': case '\'': case '(': case ')': case '*': case '+': case ',': case ';':
    case '=': case ':': case '@':
      return true;
    default:
      return is_unreserved(c);
  }
}

constexpr char kHexUpper[] = "0123456789ABCDEF";

}  // namespace

std::string_view path_fault_words(PathFault fault) noexcept {
  switch (fault) {
    case PathFault::not_origin_form: return "does not start with '/'";
    case PathFault::encoded_slash: return "holds %2F (an encoded '/')";
    case PathFault::encoded_backslash: return "holds %5C (an encoded '\\')";
    case PathFault::encoded_nul: return "holds %00 (an encoded NUL)";
    case PathFault::backslash: return "holds a '\\'";
    case PathFault::empty_segment: return "holds an empty segment (\"//\")";
    case PathFault::dot_segment: return "holds a \".\" or \"..\" segment (also before a ';': \"..;x\")";
    case PathFault::bare_parameters: return "holds a segment that is only ';'-parameters (\"/;x\")";
    case PathFault::bad_percent: return "holds a '%' not followed by two hex digits";
    case PathFault::bad_character: return "holds a character no URL path may hold unencoded";
  }
  return "is not a path";
}

std::variant<std::string, PathFault> normalise_path_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') return PathFault::backslash;
    if (c != '%') {
      if (!is_path_char(c)) return PathFault::bad_character;
      out += c;
      continue;
    }
    if (i + 2 >= text.size()) return PathFault::bad_percent;
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return PathFault::bad_percent;
    const auto byte = static_cast<char>(high * 16 + low);
    i += 2;
    // These three change what the path is, not just how it is spelled: an origin that decodes
    // before it splits sees another path than one that splits first (%2F, %5C), and a C origin
    // stops at a NUL. No rule can be written about a path whose shape depends on the reader.
    if (byte == '/') return PathFault::encoded_slash;
    if (byte == '\\') return PathFault::encoded_backslash;
    if (byte == '\0') return PathFault::encoded_nul;
    if (is_unreserved(byte)) {
      // "%73ecrets" is "secrets" to every origin (RFC 3986 §6.2.2.2): decoded here, so a deny
      // of /secrets cannot be passed by spelling it otherwise, and "%2e%2e" is seen as "..".
      out += byte;
    } else {
      // Kept encoded: an encoded reserved character is data, not a delimiter ("%3F" is a '?'
      // inside a segment, never the query), so decoding it would change the path's meaning.
      // The hex is upper-cased (RFC 3986 §6.2.2.1: %3f and %3F are one octet), so a rule
      // written either way matches both.
      out += '%';
      out += kHexUpper[high];
      out += kHexUpper[low];
    }
  }
  return out;
}

std::variant<std::string, PathFault> normalise_segment(std::string_view text) {
  if (text.empty()) return PathFault::empty_segment;
  auto out = normalise_path_text(text);
  const auto* segment = std::get_if<std::string>(&out);
  if (segment == nullptr) return out;
  // Checked after decoding: "%2e" and "%2E%2e" climb as "." and ".." do, at an origin that
  // decodes before it resolves dot segments. And before a ';': a servlet container drops a
  // segment's ';'-parameters first, so "/allowed/..;/other" would be "/other" there while a rule
  // read "/allowed/<something>" (SPEC §19a).
  const std::string_view head = segment_without_parameters(*segment);
  if (head == "." || head == "..") return PathFault::dot_segment;
  // "/;x/a" would be "//a" once the parameters go: an empty segment, merged by some origins and
  // not others, as "//" is.
  if (head.empty()) return PathFault::bare_parameters;
  return out;
}

std::string_view segment_without_parameters(std::string_view segment) noexcept {
  return segment.substr(0, segment.find(';'));
}

PathSegments without_parameters(const PathSegments& segments) {
  PathSegments out;
  out.reserve(segments.size());
  for (const std::string& segment : segments) out.emplace_back(segment_without_parameters(segment));
  return out;
}

bool has_parameters(const PathSegments& segments) noexcept {
  for (const std::string& segment : segments) {
    if (segment.find(';') != std::string::npos) return true;
  }
  return false;
}

std::variant<PathSegments, PathFault> judge_request_path(std::string_view target) {
  // Origin form only (RFC 9112 §3.2.1): inside a TLS session the authority is already decided,
  // and an absolute or asterisk form would be a second reading of it.
  if (target.empty() || target.front() != '/') return PathFault::not_origin_form;
  // The query is the origin's business: rules match paths (SPEC §18).
  std::string_view path = target.substr(0, target.find('?'));
  path.remove_prefix(1);
  // "/a/" is "/a"; "/" has no segment; "//" keeps its empty one (a fault below).
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  PathSegments segments;
  if (path.empty()) return segments;
  for (;;) {
    const std::size_t slash = path.find('/');
    auto segment = normalise_segment(path.substr(0, slash));
    if (const auto* fault = std::get_if<PathFault>(&segment)) return *fault;
    segments.push_back(std::get<std::string>(std::move(segment)));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

}  // namespace boxproxy
