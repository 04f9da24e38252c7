// SPDX-License-Identifier: Apache-2.0
// An endpoint named for request inspection (SPEC §18): its host, its rules, and the judgement of
// one request by them. Pure: the TLS session that carries the request is the proxy's.
//
// A request is judged in this order (the first that applies decides; its label is what the
// request line's rule= and `check` print):
//   1. the path (table/request_path.h): a bad one is `bad path`, label "-";
//   2. "deny": the first entry whose method and glob match refuses it, `request denied`,
//      label "deny[N]" (or the entry's "name"): a deny beats every grant. Its glob matches when it
//      matches the path as sent or the path with every segment's ';'-parameters removed (SPEC
//      §19a: either is what some origin reads);
//   3. "access": read-only allows GET, HEAD and OPTIONS and refuses the rest, read-write allows
//      every method; label "access";
//   4. "rules": the first matching entry allows it, label "rules[N]" (or its "name"); none
//      matching refuses it, label "-". Its glob must match both the path as sent and the path
//      without ';'-parameters: what it allows is allowed however the origin reads the path;
//   5. neither "access" nor "rules": allowed, label "-".
// Methods are compared without regard to case: an origin that reads "delete" as DELETE must not
// be reached past a deny of DELETE. Paths are compared as the endpoint's "case" says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "table/host_list.h"
#include "table/path_glob.h"

namespace boxproxy {

// The port of an endpoint whose entry names none: HTTPS's.
inline constexpr std::uint16_t kInspectDefaultPort = 443;

enum class InspectAccess : std::uint8_t {
  read_only,   // GET, HEAD, OPTIONS
  read_write,  // every method
};

enum class InspectMode : std::uint8_t {
  enforce,  // a request denied is refused (403)
  report,   // a request denied is logged with report=1 and goes on; other refusals still hold
};

// One entry of "rules" or "deny".
struct InspectRule {
  // HTTP tokens, upper-cased, each once, matching any one of them ("method": ["GET", "HEAD"]);
  // or {"*"} alone, every method. Never empty.
  std::vector<std::string> methods;
  PathGlob path;
  std::optional<std::string> name;  // its label instead of rules[N] / deny[N]
  // SPEC §20: a request this rule allows is held and the supervisor asked (never on a deny entry).
  bool ask = false;
};

// SPEC §19a: a place where a secret's placeholder is swapped for its value (a "secrets" object's
// PLACE). Anywhere else, the placeholder is `secret misdirected` (proxy/wire/placeholder_swap.h).
struct SecretPlace {
  enum class Kind : std::uint8_t {
    authorization,  // the Authorization header: its whole value, a Bearer/token credential, Basic's user or password
    header,         // every occurrence in the value of the header `name`
    query,          // the query parameter `name`'s value, when the placeholder is the whole value
  };
  Kind kind = Kind::authorization;
  std::string name;  // header: lower-cased (names compare so); query: as given (compared exactly)
  bool operator==(const SecretPlace& other) const = default;
};

// SPEC §20's "sign": {"aws-sigv4": {...}}: the secrets (by NAME, the config's "{NAME}" without its
// braces) each request is signed with again, and the credential scopes it may be signed for.
struct SignAwsSigV4 {
  std::string access_key_id;
  std::string secret_access_key;
  std::optional<std::string> session_token;
  std::vector<std::string> regions;   // empty: any region
  std::vector<std::string> services;  // never empty (the config requires it)
  bool operator==(const SignAwsSigV4& other) const = default;
};

// The headers the signer replaces (lower case): on a signing endpoint they are exempt from the
// `secret misdirected` check (the box signs with placeholders; these never go out as sent).
[[nodiscard]] bool is_signer_replaced_header(std::string_view name) noexcept;

struct InspectEndpoint {
  HostEntry host;                   // its port always set (kInspectDefaultPort when none was named)
  std::optional<std::string> name;  // what check calls it instead of its host entry
  std::optional<InspectAccess> access;             // never with rules
  std::optional<std::vector<InspectRule>> rules;   // never with access; empty: nothing is allowed
  std::vector<InspectRule> deny;
  InspectMode mode = InspectMode::enforce;
  // SPEC §19's: each header name (a token, as given) with its template ("Bearer {github}"), which
  // replaces every header of that name on each request (proxy/wire/header_inject.h); and the
  // secret names whose placeholders may be sent to this endpoint.
  std::vector<std::pair<std::string, std::string>> inject;
  std::vector<std::string> secrets;
  // SPEC §19a's object form of "secrets": each name's places. A name of `secrets` not here (the
  // list form) is swapped in the Authorization header only (secret_places_of).
  std::vector<std::pair<std::string, std::vector<SecretPlace>>> secret_places;
  // SPEC §19a: "case": "insensitive" compares the rules and paths without regard to ASCII case,
  // for origins that fold case (where "/ADMIN" is "/admin", a deny of "/admin" must hold).
  PathCase path_case = PathCase::sensitive;
  // SPEC §19a: "get-bodies": true lets a GET or HEAD carry a body (get_body_refused).
  bool get_bodies = false;
  // SPEC §20's "sign": each request signed again with the session's secrets, after every other change.
  std::optional<SignAwsSigV4> sign;
  // "hint": true: a refusal's body names the method, path and endpoint judged, and for request
  // denied what the rules allow (proxy/stages/refusal_detail.h), for a client (an agent) that can
  // act on it; off, the body is SPEC §6's words alone and the policy stays unsaid.
  bool hint = false;
  // SPEC §20: "ask": true holds every request the endpoint's rules allow (by any entry, by
  // "access" or with no rules) until the supervisor answers.
  bool ask = false;

  // Whether the proxy puts a credential into this endpoint's requests itself, by "inject" or by
  // swapping a placeholder ("secrets"): there TRACE is refused and Accept-Encoding rewritten to
  // identity (SPEC §19a), so that nothing the origin hands back can carry the value past the
  // scrubber. An endpoint that only signs is not one ("sign" keeps the box's Accept-Encoding).
  [[nodiscard]] bool injects_or_swaps() const noexcept { return !inject.empty() || !secrets.empty(); }
};

// SPEC §20: whether any request of `endpoint` may be held for the supervisor ("ask" on it or on
// one of its rules).
[[nodiscard]] bool asks_about_requests(const InspectEndpoint& endpoint) noexcept;

// ---- SPEC §19a: where a placeholder is swapped --------------------------------------------------

// "authorization", "header:<name>" (a header name that check_inject_header accepts: never one
// that frames or routes the request) or "query:<param>" (1 to 128 visible ASCII bytes, none of
// "&=#%+"). The place, or why not.
[[nodiscard]] std::variant<SecretPlace, std::string> parse_secret_place(std::string_view text);
// And back, as the config spells it.
[[nodiscard]] std::string secret_place_text(const SecretPlace& place);
// Where NAME's placeholder is swapped on `endpoint`: nothing when "secrets" does not name it; its
// object entry's places; else (the list form) the Authorization header alone.
[[nodiscard]] std::vector<SecretPlace> secret_places_of(const InspectEndpoint& endpoint, std::string_view name);

// ---- the values, each checked alone; an error is a message naming the value ------------------

// A host entry as --inspect and "host" take it: a host-list entry (name[:port] or
// *.name[:port]) whose port, when absent, is kInspectDefaultPort.
[[nodiscard]] std::variant<HostEntry, std::string> parse_inspect_host(std::string_view text);

// `--inspect ENTRY`: an endpoint with that host and no rules (every method and path allowed once
// the path is sound).
[[nodiscard]] std::variant<InspectEndpoint, std::string> parse_inspect_entry(std::string_view text);

// A rule's method: an HTTP token (RFC 9110 §5.6.2), or "*". nullopt when good, else why not.
[[nodiscard]] std::optional<std::string> check_rule_method(std::string_view text);

// A rule's methods as a list ("method": ["GET", "HEAD"]): 1 to kMaxRuleMethods tokens, each once
// (in any case), and "*" only alone. nullopt when good, else why not.
inline constexpr std::size_t kMaxRuleMethods = 32;
[[nodiscard]] std::optional<std::string> check_rule_methods(const std::vector<std::string_view>& methods);

// A rule from its parts, each checked (check_rule_method or check_rule_methods, PathGlob::parse,
// check_inspect_name); the methods upper-cased. The first error, naming the part.
[[nodiscard]] std::variant<InspectRule, std::string> make_inspect_rule(std::string_view method, std::string_view path,
                                                                       std::optional<std::string_view> name);
[[nodiscard]] std::variant<InspectRule, std::string> make_inspect_rule(const std::vector<std::string_view>& methods,
                                                                       std::string_view path,
                                                                       std::optional<std::string_view> name);

// "sensitive" or "insensitive" (the endpoint's "case").
[[nodiscard]] std::variant<PathCase, std::string> parse_path_case(std::string_view text);
[[nodiscard]] std::string_view path_case_text(PathCase path_case) noexcept;

// "read-only" or "read-write".
[[nodiscard]] std::variant<InspectAccess, std::string> parse_inspect_access(std::string_view text);

// "enforce" or "report".
[[nodiscard]] std::variant<InspectMode, std::string> parse_inspect_mode(std::string_view text);

// An endpoint's or a rule's "name": 1 to 64 of [A-Za-z0-9._-], starting with a letter or digit,
// and not "access": it stands alone as rule=NAME in a log line, so it must never read as another
// label or break the line. nullopt when good, else why not.
[[nodiscard]] std::optional<std::string> check_inspect_name(std::string_view text);

// An "inject" header name: an HTTP token, and none of the headers that frame or route a request
// or that the proxy removes or writes itself (Host, Content-Length, Transfer-Encoding,
// Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE,
// Trailer, Upgrade). nullopt when good.
[[nodiscard]] std::optional<std::string> check_inject_header(std::string_view text);

// An "inject" template: printable ASCII (so it can never end the header or add one), braces only
// around a secret's name ("{github}"). nullopt when good.
[[nodiscard]] std::optional<std::string> check_inject_template(std::string_view text);

// A secret's name: 1 to 32 of [a-z0-9_] (SPEC §19). nullopt when good.
[[nodiscard]] std::optional<std::string> check_secret_name(std::string_view text);

// The keys of `endpoint` that hand it a credential: "inject", "secrets" and "sign", those it
// carries, in that order.
[[nodiscard]] std::vector<std::string_view> credential_keys(const InspectEndpoint& endpoint);

// The endpoint as a whole: "access" and "rules" are exclusive; a wildcard host ("*.name") carries
// no credential_keys (SPEC §19a: a name any tenant of the domain can register would get the
// credential); "sign" and an "inject" of Authorization are exclusive (SPEC §20). nullopt when
// good, else why not, naming the host entry and the key.
[[nodiscard]] std::optional<std::string> check_inspect_endpoint(const InspectEndpoint& endpoint);

// The text of an access and a mode, as the config file spells them.
[[nodiscard]] std::string_view access_text(InspectAccess access) noexcept;
[[nodiscard]] std::string_view mode_text(InspectMode mode) noexcept;

// What check calls an endpoint: its "name", else its host entry with its port
// ("api.github.com:443").
[[nodiscard]] std::string endpoint_label(const InspectEndpoint& endpoint);

// ---- the judgement of one request ------------------------------------------------------------

enum class RequestVerdict : std::uint8_t {
  allowed,         // "ok"
  request_denied,  // 403; in report mode logged with report=1 and let through
  bad_path,        // 400, in both modes
};

// "ok", "request denied", "bad path": the log's class (and check's last column).
[[nodiscard]] std::string_view verdict_class(RequestVerdict verdict) noexcept;

struct RequestJudgement {
  RequestVerdict verdict = RequestVerdict::bad_path;
  std::string rule = "-";  // deny[N] | rules[N] | access | the deciding entry's "name" | -
  bool ask = false;        // allowed, by an entry (or an endpoint) that says "ask": true (SPEC §20)
};

// Judges `method` (a token, as the request line's framing check has made sure) and `target` (the
// request line's target) by `endpoint`'s rules, in the order above. The mode is not applied:
// a report-mode endpoint's denial is still request_denied, for its caller to log and let pass.
[[nodiscard]] RequestJudgement judge_request(const InspectEndpoint& endpoint, std::string_view method,
                                             std::string_view target);

}  // namespace boxproxy
