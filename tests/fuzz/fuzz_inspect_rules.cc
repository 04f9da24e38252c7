// SPDX-License-Identifier: Apache-2.0
// Request inspection's pure parts (SPEC §18): table/request_path, table/path_glob,
// table/inspect_endpoint's judgement and table/check_request.
//
// The first byte picks what the rest is fed to. Invariants:
//   - a judged path's segments are never empty, ".", "..", nor hold a '/'; they are normalised
//     already (normalising one again changes nothing), and the path written back from them judges
//     to the same segments;
//   - an accepted glob keeps its text; the path made from it (each '*' read as "x") is sound and
//     matches it; a refused glob's message names it;
//   - the glob matcher agrees with a plain recursive matcher written here from the rules' words
//     (on inputs small enough for it);
//   - a judgement is bad_path exactly when the path is refused, and its label is "-", "access",
//     deny[N], rules[N] or a rule's name, as the endpoint's shape allows;
//   - a parsed check request's target starts with '/' and holds no '#'; its method is a token.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "table/check_request.h"
#include "table/inspect_endpoint.h"
#include "table/path_glob.h"
#include "table/request_path.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

std::pair<std::string_view, std::string_view> split_line(std::string_view text) {
  const std::size_t newline = text.find('\n');
  if (newline == std::string_view::npos) return {text, {}};
  return {text.substr(0, newline), text.substr(newline + 1)};
}

std::string join(const PathSegments& segments) {
  std::string out;
  for (const std::string& s : segments) out += "/" + s;
  return out.empty() ? "/" : out;
}

void check_path(std::string_view target) {
  const auto judged = judge_request_path(target);
  if (!std::holds_alternative<PathSegments>(judged)) return;
  const PathSegments& segments = std::get<PathSegments>(judged);
  FUZZ_CHECK(!target.empty() && target.front() == '/');
  for (const std::string& s : segments) {
    FUZZ_CHECK(!s.empty() && s != "." && s != "..");
    FUZZ_CHECK(s.find('/') == std::string::npos && s.find('?') == std::string::npos);
    const auto again = normalise_segment(s);
    FUZZ_CHECK(std::holds_alternative<std::string>(again) && std::get<std::string>(again) == s);
  }
  const auto round = judge_request_path(join(segments));
  FUZZ_CHECK(std::holds_alternative<PathSegments>(round) && std::get<PathSegments>(round) == segments);
}

// ---- a reference matcher, from the rules' words, for small inputs -----------------------------

// `pattern` (a glob segment, its literal pieces normalised) against `s`, '*' any run.
bool segment_reference(const std::vector<std::string>& pieces, std::string_view s) {
  // Recursive on pieces: the first piece is a prefix; each star may take any run.
  if (pieces.size() == 1) return s == pieces[0];
  if (!s.starts_with(pieces[0])) return false;
  s.remove_prefix(pieces[0].size());
  std::vector<std::string> rest(pieces.begin() + 1, pieces.end());
  for (std::size_t take = 0; take <= s.size(); ++take) {
    if (segment_reference(rest, s.substr(take))) return true;
  }
  return false;
}

struct RefPart {
  bool many = false;
  std::vector<std::string> pieces;
};

bool glob_reference(const std::vector<RefPart>& parts, std::size_t g, const PathSegments& path, std::size_t p) {
  if (g == parts.size()) return p == path.size();
  if (parts[g].many) {
    for (std::size_t end = p + 1; end <= path.size(); ++end) {
      if (glob_reference(parts, g + 1, path, end)) return true;
    }
    return false;
  }
  return p < path.size() && segment_reference(parts[g].pieces, path[p]) && glob_reference(parts, g + 1, path, p + 1);
}

// The parts of a glob PathGlob accepted, read again here the plain way.
std::vector<RefPart> reference_parts(std::string_view text) {
  std::vector<RefPart> parts;
  std::string_view path = text.substr(1);
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return parts;
  for (;;) {
    const std::size_t slash = path.find('/');
    const std::string_view segment = path.substr(0, slash);
    RefPart part;
    if (segment == "**") {
      part.many = true;
    } else {
      std::size_t start = 0;
      for (;;) {
        const std::size_t star = segment.find('*', start);
        part.pieces.push_back(std::get<std::string>(normalise_path_text(segment.substr(start, star - start))));
        if (star == std::string_view::npos) break;
        start = star + 1;
      }
    }
    parts.push_back(std::move(part));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

void check_glob(std::string_view text) {
  const auto parsed = PathGlob::parse(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    FUZZ_CHECK(error->starts_with("\""));
    return;
  }
  const PathGlob& glob = std::get<PathGlob>(parsed);
  FUZZ_CHECK(glob.text() == text);
  std::string example(text);
  for (char& c : example) {
    if (c == '*') c = 'x';
  }
  const auto judged = judge_request_path(example);
  FUZZ_CHECK(std::holds_alternative<PathSegments>(judged));
  FUZZ_CHECK(glob.matches(std::get<PathSegments>(judged)));
}

void check_match(std::string_view glob_text, std::string_view target) {
  const auto parsed = PathGlob::parse(glob_text);
  const auto judged = judge_request_path(target);
  if (!std::holds_alternative<PathGlob>(parsed) || !std::holds_alternative<PathSegments>(judged)) return;
  const PathSegments& segments = std::get<PathSegments>(judged);
  const bool matched = std::get<PathGlob>(parsed).matches(segments);
  // The reference is exponential: only small inputs.
  if (glob_text.size() <= 48 && segments.size() <= 12) {
    FUZZ_CHECK(matched == glob_reference(reference_parts(glob_text), 0, segments, 0));
  }
}

// Lines: "<flags byte><method> <target>", then rules "<d|r><method> <glob>"; flags pick access
// and mode.
void check_judgement(std::string_view text) {
  auto [head, rest] = split_line(text);
  if (head.empty()) return;
  const unsigned flags = static_cast<unsigned char>(head[0]);
  head.remove_prefix(1);
  const std::size_t space = head.find(' ');
  if (space == std::string_view::npos) return;
  const std::string_view method = head.substr(0, space);
  const std::string_view target = head.substr(space + 1);
  if (check_rule_method(method) || method == "*") return;  // the framing check lets no other through

  InspectEndpoint endpoint = std::get<InspectEndpoint>(parse_inspect_entry("fuzz.example"));
  if (flags % 3 == 1) endpoint.access = InspectAccess::read_only;
  if (flags % 3 == 2) endpoint.access = InspectAccess::read_write;
  const bool with_rules = (flags & 4) != 0 && !endpoint.access;
  if (with_rules) endpoint.rules.emplace();
  std::size_t named = 0;
  while (!rest.empty()) {
    auto [line, after] = split_line(rest);
    rest = after;
    if (line.size() < 2) continue;
    const bool deny = line[0] == 'd';
    line.remove_prefix(1);
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::optional<std::string_view> name;
    if ((named++ % 2) == 1) name = "named";
    auto made = make_inspect_rule(line.substr(0, sp), line.substr(sp + 1), name);
    if (!std::holds_alternative<InspectRule>(made)) continue;
    if (deny) {
      endpoint.deny.push_back(std::get<InspectRule>(std::move(made)));
    } else if (with_rules) {
      endpoint.rules->push_back(std::get<InspectRule>(std::move(made)));
    }
  }
  const RequestJudgement j = judge_request(endpoint, method, target);
  const bool sound = std::holds_alternative<PathSegments>(judge_request_path(target));
  FUZZ_CHECK((j.verdict == RequestVerdict::bad_path) == !sound);
  if (!sound) {
    FUZZ_CHECK(j.rule == "-");
    return;
  }
  if (j.rule.starts_with("deny[") || (j.rule == "named" && j.verdict == RequestVerdict::request_denied)) {
    FUZZ_CHECK(j.verdict == RequestVerdict::request_denied);
  } else if (j.rule == "access") {
    FUZZ_CHECK(endpoint.access.has_value());
  } else if (j.rule.starts_with("rules[") || j.rule == "named") {
    FUZZ_CHECK(with_rules && j.verdict == RequestVerdict::allowed);
  } else {
    FUZZ_CHECK(j.rule == "-");
    FUZZ_CHECK(!endpoint.access.has_value());
    FUZZ_CHECK((j.verdict == RequestVerdict::allowed) == !with_rules);
  }
}

void check_request(std::string_view text) {
  const auto parsed = parse_check_request(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    FUZZ_CHECK(!error->empty());
    return;
  }
  const CheckRequest& request = std::get<CheckRequest>(parsed);
  FUZZ_CHECK(!check_rule_method(request.method).has_value());
  FUZZ_CHECK(!request.target.empty() && request.target.front() == '/');
  FUZZ_CHECK(request.target.find('#') == std::string::npos);
  FUZZ_CHECK(request.authority.find_first_of("/?#") == std::string::npos);
  FUZZ_CHECK(names_request(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 4096) return 0;
  const unsigned mode = data[0] % 5;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  switch (mode) {
    case 0:
      check_path(text);
      break;
    case 1:
      check_glob(text);
      break;
    case 2: {
      const auto [glob, target] = split_line(text);
      check_match(glob, target);
      break;
    }
    case 3:
      check_judgement(text);
      break;
    default:
      check_request(text);
      break;
  }
  return 0;
}
