// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/sigv4_canonical.h"

#include <algorithm>
#include <array>
#include <utility>

#include "proxy/wire/http_head.h"  // is_token_char
#include "table/ascii.h"
#include "table/placeholder.h"

namespace boxproxy {

namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view kSigV4aAlgorithm = "AWS4-ECDSA-P256-SHA256";
// A region or service name: AWS's are far shorter; the bound keeps the string to sign small.
constexpr std::size_t kMaxScopeName = 64;
// Rounds of percent-decoding a query name for the presigned check. An origin decodes once; more
// rounds catch a hop that decodes too. Bounded: "until nothing changes" takes a round per level of
// nesting, quadratic in a crafted name as long as the head allows.
constexpr int kPresignedDecodeRounds = 4;

// RFC 3986's unreserved characters: what SigV4 leaves unencoded.
constexpr bool is_unreserved(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == '~';
}

void append_encoded(std::string& out, std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : text) {
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      out += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
}

// `text` with every "%XX" decoded; nullopt when a "%" is not followed by two hex digits.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// Calls `each(piece)` for every non-empty piece of `text` between `separator`s.
template <typename Each>
void for_each_piece(std::string_view text, char separator, Each&& each) {
  while (!text.empty()) {
    const std::size_t end = text.find(separator);
    const std::string_view piece = text.substr(0, end);
    if (!piece.empty()) each(piece);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

bool is_header_name(std::string_view name) noexcept {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); });
}

bool is_scope_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxScopeName) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

bool all_digits(std::string_view text) noexcept {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "KEY/YYYYMMDD/REGION/SERVICE/aws4_request": the scope, or nullopt.
std::optional<SigV4Scope> parse_credential(std::string_view credential) {
  std::array<std::string_view, 5> parts{};
  std::size_t count = 0;
  for (std::size_t start = 0;;) {
    const std::size_t slash = credential.find('/', start);
    if (count == parts.size()) return std::nullopt;
    parts[count++] = credential.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (count != parts.size() || parts[0].empty() || parts[1].size() != 8 || !all_digits(parts[1])) return std::nullopt;
  if (!is_scope_name(parts[2]) || !is_scope_name(parts[3]) || parts[4] != "aws4_request") return std::nullopt;
  return SigV4Scope{std::string(parts[2]), std::string(parts[3])};
}

// "a;b;c": lower-case header names, none empty.
bool is_signed_headers_list(std::string_view list) noexcept {
  if (list.empty() || list.front() == ';' || list.back() == ';' || list.find(";;") != std::string_view::npos) {
    return false;
  }
  return std::all_of(list.begin(), list.end(), [](char c) {
    return c == ';' || c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

bool is_signature_hex(std::string_view text) noexcept {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) { return hex_value(c) >= 0; });
}

}  // namespace

std::string_view sigv4_refusal_word(SigV4Refusal refusal) noexcept {
  switch (refusal) {
    case SigV4Refusal::presigned: return "presigned";
    case SigV4Refusal::no_signature: return "no-signature";
    case SigV4Refusal::sigv4a: return "sigv4a";
    case SigV4Refusal::malformed: return "malformed-signature";
    case SigV4Refusal::region_not_listed: return "region";
    case SigV4Refusal::service_not_listed: return "service";
    case SigV4Refusal::credential_service: return "credential-service";
    case SigV4Refusal::signed_chunks: return "signed-chunks";
    case SigV4Refusal::bad_target: return "bad-target";
    case SigV4Refusal::bad_header: return "bad-header";
    case SigV4Refusal::signer_failed: return "signer-failed";
  }
  return "?";
}

SigV4ScopeOrRefusal parse_sigv4_authorization(std::string_view value) {
  value = trim_ows(value);
  const std::size_t space = value.find(' ');
  const std::string_view algorithm = value.substr(0, space);
  if (algorithm == kSigV4aAlgorithm) return {std::nullopt, SigV4Refusal::sigv4a};
  if (algorithm != kAlgorithm) return {std::nullopt, SigV4Refusal::no_signature};
  if (space == std::string_view::npos) return {std::nullopt, SigV4Refusal::malformed};
  std::optional<SigV4Scope> scope;
  bool credential = false, signed_headers = false, signature = false, bad = false;
  // Each component once: a second Credential could make two readers pick two scopes.
  for_each_piece(value.substr(space + 1), ',', [&](std::string_view piece) {
    piece = trim_ows(piece);
    const std::size_t equals = piece.find('=');
    const std::string_view name = piece.substr(0, equals);
    const std::string_view field = equals == std::string_view::npos ? std::string_view{} : piece.substr(equals + 1);
    if (name == "Credential" && !credential) {
      credential = true;
      scope = parse_credential(field);
      bad = bad || !scope;
    } else if (name == "SignedHeaders" && !signed_headers) {
      signed_headers = true;
      bad = bad || !is_signed_headers_list(field);
    } else if (name == "Signature" && !signature) {
      signature = true;
      bad = bad || !is_signature_hex(field);
    } else {
      bad = true;
    }
  });
  if (bad || !credential || !signed_headers || !signature) return {std::nullopt, SigV4Refusal::malformed};
  return {std::move(scope), SigV4Refusal::malformed};
}

bool is_presigned_query(std::string_view query) {
  bool found = false;
  for_each_piece(query, '&', [&](std::string_view piece) {
    // Lower-cased and decoded as the placeholder tripwire reads text (a "%" that does not decode
    // stays), again until nothing changes: an origin decodes once, but a hop before it may too.
    std::string name(piece.substr(0, piece.find('=')));
    for (int round = 0; round < kPresignedDecodeRounds; ++round) {
      std::string decoded = placeholder_search_form(name);
      if (decoded == name) break;
      name = std::move(decoded);
    }
    found = found || name == "x-amz-signature" || name == "x-amz-credential";
  });
  return found;
}

std::optional<SigV4Refusal> check_sigv4_scope(const SigV4Scope& scope, const SigV4Policy& policy) {
  const auto listed = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  // The services that hand out credentials: a call the proxy signs there would hand the box a key
  // (or a session) of its own, which then works without the proxy. Only an operator who names
  // one in "services" gets it signed.
  static constexpr std::array<std::string_view, 6> kCredentialServices = {"sts", "iam", "sso", "sso-oauth",
                                                                          "cognito-identity", "s3express"};
  const bool issues_credentials =
      std::find(kCredentialServices.begin(), kCredentialServices.end(), scope.service) != kCredentialServices.end();
  if (issues_credentials && !listed(policy.services, scope.service)) return SigV4Refusal::credential_service;
  if (!listed(policy.services, scope.service)) return SigV4Refusal::service_not_listed;
  if (!policy.regions.empty() && !listed(policy.regions, scope.region)) return SigV4Refusal::region_not_listed;
  return std::nullopt;
}

bool is_s3_signing_name(std::string_view service) noexcept {
  // botocore's S3_SIGNING_NAMES: the services S3's signer (S3SigV4Auth) signs for.
  return service == "s3" || service == "s3-outposts" || service == "s3-object-lambda";
}

namespace {

// The target split at its first "?"; nullopt for a "#" (a fragment is never sent; an origin and
// the proxy could read the rest differently).
struct SplitTarget {
  std::string_view path;
  std::string_view query;
};
std::optional<SplitTarget> split_target(std::string_view target) {
  if (target.find('#') != std::string_view::npos) return std::nullopt;
  const std::size_t mark = target.find('?');
  if (mark == std::string_view::npos) return SplitTarget{target, {}};
  return SplitTarget{target.substr(0, mark), target.substr(mark + 1)};
}

// What the head's headers say for the plan: the one Authorization, the one Host, the declared
// payload hash; or why not.
struct HeadFacts {
  std::optional<SigV4Refusal> refusal;
  std::string_view authorization;
  std::optional<std::string_view> content_sha;
};
HeadFacts head_facts(const std::vector<SigV4Header>& headers) {
  HeadFacts facts;
  int authorizations = 0, hosts = 0;
  for (const SigV4Header& header : headers) {
    if (iequals(header.name, "authorization")) {
      ++authorizations;
      facts.authorization = header.value;
    } else if (!is_header_name(header.name)) {
      facts.refusal = SigV4Refusal::bad_header;
    } else if (iequals(header.name, "host")) {
      ++hosts;
    } else if (iequals(header.name, "x-amz-content-sha256")) {
      // Two that differ: the origin and the proxy could each take another as the declared one.
      if (facts.content_sha && *facts.content_sha != header.value) facts.refusal = SigV4Refusal::bad_header;
      facts.content_sha = header.value;
    }
  }
  if (hosts != 1) facts.refusal = SigV4Refusal::bad_header;
  if (authorizations > 1) facts.refusal = SigV4Refusal::malformed;
  if (authorizations == 0) facts.refusal = SigV4Refusal::no_signature;
  return facts;
}

// The declared payload hash kept (an unsigned form), "" to hash the body, or signed_chunks.
std::optional<std::string_view> payload_kept(std::optional<std::string_view> declared, bool& signed_chunks) {
  signed_chunks = false;
  if (!declared) return std::string_view{};
  if (*declared == kUnsignedPayload || *declared == kStreamingUnsignedTrailer) return *declared;
  // Every other streaming form is signed chunk by chunk, each chunk's signature chained to the
  // seed the box made with its own key: the proxy can neither check nor remake them.
  if (declared->size() >= 10 && iequals(declared->substr(0, 10), "streaming-")) {
    signed_chunks = true;
    return std::nullopt;
  }
  return std::string_view{};
}

}  // namespace

SigV4Plan sigv4_plan(std::string_view target, const std::vector<SigV4Header>& headers, const SigV4Policy& policy) {
  SigV4Plan plan;
  const auto split = split_target(target);
  if (!split || split->path.empty() || split->path.front() != '/') {
    plan.refusal = SigV4Refusal::bad_target;
    return plan;
  }
  if (is_presigned_query(split->query)) {
    plan.refusal = SigV4Refusal::presigned;
    return plan;
  }
  const HeadFacts facts = head_facts(headers);
  if (facts.refusal) {
    plan.refusal = facts.refusal;
    return plan;
  }
  auto parsed = parse_sigv4_authorization(facts.authorization);
  if (!parsed.scope) {
    plan.refusal = parsed.refusal;
    return plan;
  }
  plan.scope = std::move(*parsed.scope);
  plan.refusal = check_sigv4_scope(plan.scope, policy);
  if (plan.refusal) return plan;
  if (!sigv4_canonical_query(split->query)) {
    plan.refusal = SigV4Refusal::bad_target;
    return plan;
  }
  bool signed_chunks = false;
  const auto kept = payload_kept(facts.content_sha, signed_chunks);
  if (signed_chunks) {
    plan.refusal = SigV4Refusal::signed_chunks;
    return plan;
  }
  plan.s3 = is_s3_signing_name(plan.scope.service);
  plan.box_sent_content_sha = facts.content_sha.has_value();
  plan.declared_payload = std::string(*kept);
  return plan;
}

std::optional<std::string> sigv4_canonical_uri(std::string_view path, bool s3) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  // S3 signs the path as sent: an object key may hold "//", "./" or "../", and S3 reads them as
  // part of the key, so normalising would sign another path than the one S3 checks.
  if (s3) return std::string(path);
  // Every other service: RFC 3986's dot-segment removal, and empty segments dropped (botocore's
  // remove_dot_segments), then encoded a second time.
  std::vector<std::string_view> segments;
  for_each_piece(path, '/', [&](std::string_view segment) {
    if (segment == ".") return;
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      return;
    }
    segments.push_back(segment);
  });
  std::string out = "/";
  for (std::size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out += '/';
    append_encoded(out, segments[i], false);
  }
  if (path.back() == '/' && !segments.empty()) out += '/';
  return out;
}

std::optional<std::string> sigv4_canonical_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  bool bad = false;
  for_each_piece(query, '&', [&](std::string_view piece) {
    const std::size_t equals = piece.find('=');
    const auto name = percent_decode(piece.substr(0, equals));
    const auto value = percent_decode(equals == std::string_view::npos ? std::string_view{} : piece.substr(equals + 1));
    if (!name || !value) {
      bad = true;
      return;
    }
    auto& pair = pairs.emplace_back();
    append_encoded(pair.first, *name, false);
    append_encoded(pair.second, *value, false);
  });
  if (bad) return std::nullopt;
  // By encoded name, then by encoded value (a name repeated): byte order, as AWS sorts.
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

bool is_sigv4_signed_header(std::string_view name) noexcept {
  // A token only (RFC 9110): a ";" or ":" in a name signed would change SignedHeaders or the
  // canonical block's lines. The head parsers refuse such names already; sigv4_plan refuses them too.
  if (!is_header_name(name)) return false;
  return iequals(name, "host") || iequals(name, "content-type") || iequals(name, "content-md5") ||
         (name.size() > 6 && iequals(name.substr(0, 6), "x-amz-"));
}

namespace {

// A header value as SigV4 signs it: its ends trimmed, each run of white space one space.
void append_trimmed_all(std::string& out, std::string_view value) {
  bool pending_space = false;
  bool any = false;
  for (char c : value) {
    if (is_ascii_space(c)) {
      pending_space = any;
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    any = true;
    out += c;
  }
}

}  // namespace

SigV4CanonicalHeaders sigv4_canonical_headers(const std::vector<SigV4Header>& headers) {
  std::vector<std::pair<std::string, std::string_view>> named;
  for (const SigV4Header& header : headers) {
    if (is_sigv4_signed_header(header.name)) named.emplace_back(ascii_lower(header.name), header.value);
  }
  // By name; a name's values stay in the order they were sent (they are joined in that order).
  std::stable_sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  SigV4CanonicalHeaders out;
  // Reserved whole: the block may hold a session token, and a string that grows leaves copies of
  // what it held in the heap it frees (the signer scrubs only the final buffer).
  std::size_t size = 1;
  for (const auto& [name, value] : named) size += name.size() + value.size() + 2;
  out.block.reserve(size);
  for (std::size_t i = 0; i < named.size(); ++i) {
    const bool same_as_before = i > 0 && named[i].first == named[i - 1].first;
    if (same_as_before) {
      out.block += ',';
    } else {
      if (i > 0) out.block += '\n';
      out.block += named[i].first;
      out.block += ':';
      if (!out.signed_names.empty()) out.signed_names += ';';
      out.signed_names += named[i].first;
    }
    append_trimmed_all(out.block, named[i].second);
  }
  if (!named.empty()) out.block += '\n';
  return out;
}

std::optional<std::string> sigv4_canonical_request(std::string_view method, std::string_view target,
                                                   const std::vector<SigV4Header>& headers,
                                                   std::string_view payload_hash, bool s3) {
  return sigv4_canonical_request(method, target, sigv4_canonical_headers(headers), payload_hash, s3);
}

std::optional<std::string> sigv4_canonical_request(std::string_view method, std::string_view target,
                                                   const SigV4CanonicalHeaders& canonical,
                                                   std::string_view payload_hash, bool s3) {
  const auto split = split_target(target);
  if (!split) return std::nullopt;
  auto uri = sigv4_canonical_uri(split->path, s3);
  auto query = sigv4_canonical_query(split->query);
  if (!uri || !query) return std::nullopt;
  std::string out;
  // Reserved whole, for the same reason as the headers block: it holds it.
  out.reserve(method.size() + uri->size() + query->size() + canonical.block.size() + canonical.signed_names.size() +
              payload_hash.size() + 6);
  out.append(method).append("\n").append(*uri).append("\n").append(*query).append("\n");
  out.append(canonical.block).append("\n").append(canonical.signed_names).append("\n").append(payload_hash);
  return out;
}

}  // namespace boxproxy
