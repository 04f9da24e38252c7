// SPDX-License-Identifier: Apache-2.0
#include "table/inspect_endpoint.h"

#include <algorithm>

#include <fmt/format.h>

#include "table/ascii.h"
#include "table/request_path.h"

namespace boxproxy {
namespace {

// RFC 9110 §5.6.2 tchar.
constexpr bool is_token_char(char c) noexcept {
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }
}

bool is_token(std::string_view text) noexcept {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!is_token_char(c)) return false;
  }
  return true;
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

constexpr bool is_secret_name_char(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

constexpr std::size_t kMaxInspectNameChars = 64;
constexpr std::size_t kMaxSecretNameChars = 32;

// read-only's methods (SPEC §18): the ones RFC 9110 §9.2.1 calls safe, less TRACE (which
// echoes the request, credentials included, back to whoever sent it).
bool is_read_only_method(std::string_view method) noexcept {
  return iequals(method, "GET") || iequals(method, "HEAD") || iequals(method, "OPTIONS");
}

bool method_matches(const InspectRule& rule, std::string_view method) noexcept {
  for (const std::string& named : rule.methods) {
    if (named == "*" || iequals(named, method)) return true;
  }
  return false;
}

std::string rule_label(const InspectRule& rule, std::string_view list, std::size_t index) {
  return rule.name ? *rule.name : fmt::format("{}[{}]", list, index);
}

}  // namespace

std::variant<HostEntry, std::string> parse_inspect_host(std::string_view text) {
  auto parsed = parse_host_entry(text);
  if (auto* entry = std::get_if<HostEntry>(&parsed)) {
    // Inspection terminates TLS: with no port named it is HTTPS's, never the host list's "80 and 443".
    if (!entry->port) entry->port = kInspectDefaultPort;
  }
  return parsed;
}

std::variant<InspectEndpoint, std::string> parse_inspect_entry(std::string_view text) {
  auto host = parse_inspect_host(text);
  if (auto* error = std::get_if<std::string>(&host)) return std::move(*error);
  InspectEndpoint endpoint;
  endpoint.host = std::get<HostEntry>(std::move(host));
  return endpoint;
}

std::optional<std::string> check_rule_method(std::string_view text) {
  if (text == "*" || is_token(text)) return std::nullopt;
  return std::string("is not an HTTP method (a token such as GET or PROPFIND) nor *");
}

std::optional<std::string> check_rule_methods(const std::vector<std::string_view>& methods) {
  if (methods.empty()) return std::string("is an empty list (name one method or more, or \"*\")");
  if (methods.size() > kMaxRuleMethods) return fmt::format("names more than {} methods", kMaxRuleMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    if (auto error = check_rule_method(methods[i])) return fmt::format("\"{}\" {}", methods[i], *error);
    // "*" among others would make them dead words: the list would read narrower than it is.
    if (methods[i] == "*" && methods.size() > 1) return std::string("holds \"*\" with other methods (\"*\" stands alone)");
    for (std::size_t j = 0; j < i; ++j) {
      if (iequals(methods[j], methods[i])) return fmt::format("names \"{}\" twice", methods[i]);
    }
  }
  return std::nullopt;
}

std::variant<InspectRule, std::string> make_inspect_rule(std::string_view method, std::string_view path,
                                                         std::optional<std::string_view> name) {
  if (auto error = check_rule_method(method)) return fmt::format("method \"{}\": {}", method, *error);
  return make_inspect_rule(std::vector<std::string_view>{method}, path, name);
}

std::variant<InspectRule, std::string> make_inspect_rule(const std::vector<std::string_view>& methods,
                                                         std::string_view path, std::optional<std::string_view> name) {
  if (auto error = check_rule_methods(methods)) return fmt::format("method {}", *error);
  auto glob = PathGlob::parse(path);
  if (auto* error = std::get_if<std::string>(&glob)) return fmt::format("path {}", *error);
  if (name) {
    if (auto error = check_inspect_name(*name)) return fmt::format("name \"{}\": {}", *name, *error);
  }
  InspectRule rule{{}, std::get<PathGlob>(std::move(glob)), std::nullopt};
  for (const std::string_view method : methods) rule.methods.push_back(ascii_upper(method));
  if (name) rule.name = std::string(*name);
  return rule;
}

std::variant<PathCase, std::string> parse_path_case(std::string_view text) {
  if (text == "sensitive") return PathCase::sensitive;
  if (text == "insensitive") return PathCase::insensitive;
  return std::string("is not \"sensitive\" or \"insensitive\"");
}

std::string_view path_case_text(PathCase path_case) noexcept {
  return path_case == PathCase::insensitive ? "insensitive" : "sensitive";
}

std::variant<InspectAccess, std::string> parse_inspect_access(std::string_view text) {
  if (text == "read-only") return InspectAccess::read_only;
  if (text == "read-write") return InspectAccess::read_write;
  return std::string("is not \"read-only\" or \"read-write\"");
}

std::variant<InspectMode, std::string> parse_inspect_mode(std::string_view text) {
  if (text == "enforce") return InspectMode::enforce;
  if (text == "report") return InspectMode::report;
  return std::string("is not \"enforce\" or \"report\"");
}

std::optional<std::string> check_inspect_name(std::string_view text) {
  const auto good_char = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  };
  const bool shape = !text.empty() && text.size() <= kMaxInspectNameChars && good_char(text.front()) &&
                     text.front() != '.' && text.front() != '_' && text.front() != '-';
  bool chars = true;
  for (const char c : text) chars = chars && good_char(c);
  if (!shape || !chars) {
    return fmt::format("is not a name (1 to {} letters, digits, '.', '_' and '-', starting with a letter or digit)",
                       kMaxInspectNameChars);
  }
  // "access" is a label of its own: a rule named so would be read as the access grant's doing.
  if (text == "access") return std::string("is the label of \"access\" itself; choose another name");
  return std::nullopt;
}

std::optional<std::string> check_inject_header(std::string_view text) {
  if (!is_token(text)) return std::string("is not a header name (a token such as Authorization)");
  // The headers that frame a request or route it, and the hop-by-hop ones the proxy removes or
  // writes itself: a template there would change where a request ends or goes (smuggling a second
  // request past the rules), not who it says it is.
  static constexpr std::string_view kNever[] = {
      "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Proxy-Connection",
      "Proxy-Authorization", "Proxy-Authenticate", "TE", "Trailer", "Upgrade"};
  for (const std::string_view never : kNever) {
    if (iequals(text, never)) {
      return fmt::format("is a header the proxy frames, routes or removes itself ({}); it cannot be injected", never);
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_inject_template(std::string_view text) {
  // Printable ASCII only: a CR or LF would end the header and start another the box never wrote.
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) return std::string("holds a byte outside printable ASCII (0x20 to 0x7e)");
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') return std::string("holds a '}' that closes no \"{NAME}\"");
    if (text[i] != '{') continue;
    const std::size_t close = text.find('}', i);
    if (close == std::string_view::npos) return std::string("holds a '{' that is never closed");
    if (auto error = check_secret_name(text.substr(i + 1, close - i - 1))) {
      return fmt::format("names a secret {}: {}", text.substr(i, close - i + 1), *error);
    }
    i = close;
  }
  return std::nullopt;
}

std::optional<std::string> check_secret_name(std::string_view text) {
  bool good = !text.empty() && text.size() <= kMaxSecretNameChars;
  for (const char c : text) good = good && is_secret_name_char(c);
  if (good) return std::nullopt;
  return fmt::format("is not a secret's name (1 to {} of a-z, 0-9 and '_')", kMaxSecretNameChars);
}

std::vector<std::string_view> credential_keys(const InspectEndpoint& endpoint) {
  std::vector<std::string_view> keys;
  if (!endpoint.inject.empty()) keys.emplace_back("inject");
  if (!endpoint.secrets.empty()) keys.emplace_back("secrets");
  if (endpoint.sign) keys.emplace_back("sign");  // a signing key is a credential too (SPEC §20)
  return keys;
}

std::optional<std::string> check_inspect_endpoint(const InspectEndpoint& endpoint) {
  // Two grants at once: which one was meant to decide is not a guess to make.
  if (endpoint.access && endpoint.rules) {
    return std::string("has both \"access\" and \"rules\"; give one (or neither, for every method and path)");
  }
  // A wildcard names hosts the operator never saw: under *.azurewebsites.net any tenant can
  // register a name, point the box at it and receive the credential (SPEC §19a).
  if (const std::vector<std::string_view> keys = credential_keys(endpoint); endpoint.host.wildcard && !keys.empty()) {
    return fmt::format("\"{}\" is a wildcard endpoint and cannot carry \"{}\" (any name under it, one a tenant of "
                       "that domain registers included, would get the credential); name each host instead",
                       entry_text(endpoint.host), keys.front());
  }
  // The signer sets Authorization, X-Amz-Date, X-Amz-Security-Token and X-Amz-Content-Sha256
  // after injection: an injected Authorization would be dropped unseen, an injected X-Amz-* would
  // go as a second copy beside the signer's (found in review), and which the operator meant is not
  // a guess to make.
  if (endpoint.sign) {
    for (const auto& [header, unused] : endpoint.inject) {
      if (iequals(header, "authorization")) {
        return fmt::format("\"{}\" has \"sign\" and \"inject\" of \"{}\"; the signature is the Authorization header, "
                           "give one of them", entry_text(endpoint.host), header);
      }
      if (is_signer_replaced_header(header)) {
        return fmt::format("\"{}\" has \"sign\" and \"inject\" of \"{}\", which the signer sets itself; give one of "
                           "them", entry_text(endpoint.host), header);
      }
    }
  }
  // Report mode sends a request the rules deny on: with "ask", a box would pass the supervisor by
  // choosing a path the rules deny (found in review), so the two do not go together.
  if (endpoint.mode == InspectMode::report && asks_about_requests(endpoint)) {
    return fmt::format("\"{}\" is in report mode and asks (\"ask\"); a request its rules deny would go on unasked: "
                       "give one of them", entry_text(endpoint.host));
  }
  return std::nullopt;
}

bool is_signer_replaced_header(std::string_view name) noexcept {
  return iequals(name, "authorization") || iequals(name, "x-amz-date") || iequals(name, "x-amz-security-token") ||
         iequals(name, "x-amz-content-sha256");
}

std::string_view access_text(InspectAccess access) noexcept {
  return access == InspectAccess::read_only ? "read-only" : "read-write";
}

std::string_view mode_text(InspectMode mode) noexcept { return mode == InspectMode::report ? "report" : "enforce"; }

std::string endpoint_label(const InspectEndpoint& endpoint) {
  return endpoint.name ? *endpoint.name : entry_text(endpoint.host);
}

std::variant<SecretPlace, std::string> parse_secret_place(std::string_view text) {
  constexpr std::string_view kHeader = "header:";
  constexpr std::string_view kQuery = "query:";
  constexpr std::size_t kMaxParamBytes = 128;
  if (text == "authorization") return SecretPlace{SecretPlace::Kind::authorization, {}};
  if (text.substr(0, kHeader.size()) == kHeader) {
    const std::string_view name = text.substr(kHeader.size());
    if (auto error = check_inject_header(name)) return fmt::format("names a header that {}", *error);
    return SecretPlace{SecretPlace::Kind::header, ascii_lower(name)};
  }
  if (text.substr(0, kQuery.size()) == kQuery) {
    const std::string_view name = text.substr(kQuery.size());
    bool good = !name.empty() && name.size() <= kMaxParamBytes;
    // A byte that ends or encodes a parameter name would make the name mean two things.
    // A ',' would split the request line's swap= list (SPEC §20's trace) in two.
    for (const char c : name) good = good && c > 0x20 && c < 0x7f && std::string_view("&=#%+,").find(c) == std::string_view::npos;
    if (!good) return fmt::format("names a query parameter that is not 1 to {} visible ASCII bytes without & = # % + ,", kMaxParamBytes);
    return SecretPlace{SecretPlace::Kind::query, std::string(name)};
  }
  return std::string("is not \"authorization\", \"header:<name>\" or \"query:<param>\"");
}

std::string secret_place_text(const SecretPlace& place) {
  switch (place.kind) {
    case SecretPlace::Kind::authorization: return "authorization";
    case SecretPlace::Kind::header: return "header:" + place.name;
    case SecretPlace::Kind::query: return "query:" + place.name;
  }
  return "authorization";
}

std::vector<SecretPlace> secret_places_of(const InspectEndpoint& endpoint, std::string_view name) {
  if (std::find(endpoint.secrets.begin(), endpoint.secrets.end(), name) == endpoint.secrets.end()) return {};
  for (const auto& [named, places] : endpoint.secret_places) {
    if (named == name) return places;
  }
  return {SecretPlace{SecretPlace::Kind::authorization, {}}};
}

std::string_view verdict_class(RequestVerdict verdict) noexcept {
  switch (verdict) {
    case RequestVerdict::allowed: return "ok";
    case RequestVerdict::request_denied: return "request denied";
    case RequestVerdict::bad_path: return "bad path";
  }
  return "bad path";
}

bool asks_about_requests(const InspectEndpoint& endpoint) noexcept {
  if (endpoint.ask) return true;
  if (!endpoint.rules) return false;
  return std::any_of(endpoint.rules->begin(), endpoint.rules->end(), [](const InspectRule& rule) { return rule.ask; });
}

RequestJudgement judge_request(const InspectEndpoint& endpoint, std::string_view method, std::string_view target) {
  auto judged = judge_request_path(target);
  if (std::holds_alternative<PathFault>(judged)) return {RequestVerdict::bad_path, "-"};
  const PathCase path_case = endpoint.path_case;
  PathSegments& as_sent = std::get<PathSegments>(judged);
  // Folded once, not once a rule; the globs hold their folded parts (table/path_glob.h).
  if (path_case == PathCase::insensitive) as_sent = fold_case(as_sent);
  // SPEC §19a: two readings of one path, as sent and as a servlet container reads it with the
  // ';'-parameters gone ("/allowed/secret;x/k" is "/allowed/secret/k" there). A deny holds if
  // either matches, a grant only if both do: no origin reads a path the rules did not judge.
  const PathSegments bare = without_parameters(as_sent);
  const auto denies = [&](const InspectRule& rule) {
    return method_matches(rule, method) && (rule.path.matches(as_sent, path_case) || rule.path.matches(bare, path_case));
  };
  const auto allows = [&](const InspectRule& rule) {
    return method_matches(rule, method) && rule.path.matches(as_sent, path_case) && rule.path.matches(bare, path_case);
  };

  // A deny beats every grant: the operator's "never this" holds whatever else allows.
  for (std::size_t i = 0; i < endpoint.deny.size(); ++i) {
    if (denies(endpoint.deny[i])) return {RequestVerdict::request_denied, rule_label(endpoint.deny[i], "deny", i)};
  }
  if (endpoint.access) {
    const bool allowed = *endpoint.access == InspectAccess::read_write || is_read_only_method(method);
    return {allowed ? RequestVerdict::allowed : RequestVerdict::request_denied, "access", allowed && endpoint.ask};
  }
  if (endpoint.rules) {
    const std::vector<InspectRule>& rules = *endpoint.rules;
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (allows(rules[i])) {
        return {RequestVerdict::allowed, rule_label(rules[i], "rules", i), rules[i].ask || endpoint.ask};
      }
    }
    // Rules are a list of what may pass: anything they do not name is refused.
    return {RequestVerdict::request_denied, "-"};
  }
  return {RequestVerdict::allowed, "-", endpoint.ask};
}

}  // namespace boxproxy
