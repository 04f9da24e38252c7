// SPDX-License-Identifier: Apache-2.0
// The box-supplied text the SigV4 signer reads (proxy/inspect/sigv4_canonical.h, SPEC §20): the
// box's Authorization value, the target's query and path, a header list. The input is lines: the
// first is the Authorization value, the second the target, the rest "name:value" headers (a Host
// is added when none is given). Invariants:
//   - a parsed scope's region and service are 1 to 64 of a-z 0-9 "-", and the value names
//     "Credential=" with them between slashes; sigv4a only for AWS4-ECDSA-P256-SHA256;
//   - a presigned query is one whose names, lower-cased and decoded, hold x-amz-signature or
//     x-amz-credential (checked against a plain reading written here for names without "%");
//   - a canonical query holds only unreserved bytes, "%XX" with upper-case hex, "=" and "&", one
//     "=" a pair, and made again from itself it is the same;
//   - the S3 canonical path is the path; the other one holds only unreserved bytes, "/" and
//     "%XX", no empty, "." or ".." segment;
//   - the signed header names are sorted, unique, lower-case, and the block has one line each;
//   - a plan without a refusal has a listed service, and its canonical request has five "\n" more
//     than its headers block.
#include <algorithm>
#include <string>
#include <vector>

#include "proxy/inspect/sigv4_canonical.h"
#include "table/ascii.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

bool is_unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.' || c == '~';
}

bool is_scope_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// Every byte unreserved, or `extra`, or a "%XX" with upper-case hex digits.
bool is_encoded(std::string_view text, std::string_view extra) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_unreserved(c) || extra.find(c) != std::string_view::npos) continue;
    if (c != '%' || i + 2 >= text.size()) return false;
    for (char d : text.substr(i + 1, 2)) {
      if (!((d >= '0' && d <= '9') || (d >= 'A' && d <= 'F'))) return false;
    }
    i += 2;
  }
  return true;
}

void check_authorization(std::string_view value) {
  const SigV4ScopeOrRefusal parsed = parse_sigv4_authorization(value);
  if (parsed.scope) {
    FUZZ_CHECK(is_scope_name(parsed.scope->region) && is_scope_name(parsed.scope->service));
    const std::string middle = "/" + parsed.scope->region + "/" + parsed.scope->service + "/aws4_request";
    FUZZ_CHECK(value.find("Credential=") != std::string_view::npos);
    FUZZ_CHECK(value.find(middle) != std::string_view::npos);
  } else if (parsed.refusal == SigV4Refusal::sigv4a) {
    FUZZ_CHECK(trim_ows(value).starts_with("AWS4-ECDSA-P256-SHA256"));
  } else {
    FUZZ_CHECK(parsed.refusal == SigV4Refusal::no_signature || parsed.refusal == SigV4Refusal::malformed);
  }
}

void check_query(std::string_view query) {
  // Names without "%": presigned exactly when one is either name, in any case.
  if (query.find('%') == std::string_view::npos) {
    bool plain = false;
    std::size_t start = 0;
    while (start <= query.size()) {
      const std::size_t end = std::min(query.find('&', start), query.size());
      const std::string_view piece = query.substr(start, end - start);
      const std::string_view name = piece.substr(0, piece.find('='));
      plain = plain || iequals(name, "x-amz-signature") || iequals(name, "x-amz-credential");
      start = end + 1;
    }
    FUZZ_CHECK(is_presigned_query(query) == plain);
  }
  const auto canonical = sigv4_canonical_query(query);
  if (!canonical) return;
  FUZZ_CHECK(is_encoded(*canonical, "=&"));
  FUZZ_CHECK(sigv4_canonical_query(*canonical) == canonical);
}

void check_path(std::string_view path) {
  const auto s3 = sigv4_canonical_uri(path, true);
  const auto other = sigv4_canonical_uri(path, false);
  FUZZ_CHECK(s3.has_value() == other.has_value());
  if (!s3) return;
  FUZZ_CHECK(*s3 == path);
  FUZZ_CHECK(is_encoded(*other, "/") && other->front() == '/');
  FUZZ_CHECK(other->find("//") == std::string::npos);
  for (std::string_view dots : {"/./", "/../"}) FUZZ_CHECK(other->find(dots) == std::string::npos);
  FUZZ_CHECK(!other->ends_with("/.") && !other->ends_with("/.."));
}

void check_headers(const std::vector<SigV4Header>& headers) {
  const SigV4CanonicalHeaders canonical = sigv4_canonical_headers(headers);
  std::vector<std::string> names;
  std::size_t start = 0;
  while (!canonical.signed_names.empty() && start <= canonical.signed_names.size()) {
    const std::size_t end = std::min(canonical.signed_names.find(';', start), canonical.signed_names.size());
    names.emplace_back(canonical.signed_names.substr(start, end - start));
    start = end + 1;
  }
  FUZZ_CHECK(std::is_sorted(names.begin(), names.end()));
  FUZZ_CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const std::string& name : names) FUZZ_CHECK(name == ascii_lower(name) && is_sigv4_signed_header(name));
  FUZZ_CHECK(static_cast<std::size_t>(std::count(canonical.block.begin(), canonical.block.end(), '\n')) ==
             names.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start <= text.size() && lines.size() < 16;) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  const std::string_view authorization = lines[0];
  const std::string_view target = lines.size() > 1 ? lines[1] : std::string_view("/");
  check_authorization(authorization);
  const std::size_t mark = target.find('?');
  check_path(target.substr(0, mark));
  if (mark != std::string_view::npos) check_query(target.substr(mark + 1));

  std::vector<SigV4Header> headers = {{"Authorization", authorization}};
  for (std::size_t i = 2; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos) continue;
    headers.push_back({lines[i].substr(0, colon), trim_ows(lines[i].substr(colon + 1))});
  }
  if (std::none_of(headers.begin(), headers.end(), [](const SigV4Header& h) { return iequals(h.name, "host"); })) {
    headers.push_back({"Host", "bucket.s3.amazonaws.com"});
  }
  check_headers(headers);

  const SigV4Policy policy{{}, {"s3", "execute-api", "sts"}};
  const SigV4Plan plan = sigv4_plan(target, headers, policy);
  if (plan.refusal) return 0;
  FUZZ_CHECK(std::find(policy.services.begin(), policy.services.end(), plan.scope.service) != policy.services.end());
  const auto canonical = sigv4_canonical_request("GET", target, headers, "UNSIGNED-PAYLOAD", plan.s3);
  FUZZ_CHECK(canonical.has_value());
  const SigV4CanonicalHeaders block = sigv4_canonical_headers(headers);
  FUZZ_CHECK(std::count(canonical->begin(), canonical->end(), '\n') ==
             std::count(block.block.begin(), block.block.end(), '\n') + 5);
  return 0;
}
