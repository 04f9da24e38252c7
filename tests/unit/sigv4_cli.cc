// SPDX-License-Identifier: Apache-2.0
// sigv4_cli: the proxy's SigV4 signer (proxy/inspect/sigv4_*.h) driven from the outside, for
// tests/e2e/test_sigv4_vectors.py, which compares what it says with botocore's own signer. Test
// only (built with the tests, never installed).
//
// Standard input: one request a line, as JSON: {"method", "target", "headers": [[name, value],
// ...], "body" (text, sent as its UTF-8 bytes), "access_key_id", "secret_access_key",
// "session_token" (null or absent: none), "time" (seconds since the epoch), "regions",
// "services"}. Standard output: one line each, {"refusal": WORD} or {"remove": [...], "set":
// [[name, value], ...], "canonical_request": TEXT}: the stage's three steps (sigv4_plan, the body
// hashed when the plan needs it, sigv4_sign), as a request stage takes them.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proxy/inspect/sigv4_canonical.h"
#include "proxy/inspect/sigv4_signer.h"
#include "table/ascii.h"

using namespace boxproxy;

namespace {

nlohmann::json refused(SigV4Refusal refusal) {
  return {{"refusal", std::string(sigv4_refusal_word(refusal))}};
}

// The canonical request the signer signed, made again from what it sets (the signer keeps none:
// it may hold the session token). For a failing comparison's message.
std::string canonical_after(const nlohmann::json& request, const std::vector<SigV4Header>& headers,
                            const SigV4Headers& out, const std::string& payload_hash, bool s3) {
  std::vector<SigV4Header> sent = sigv4_apply(headers, out);
  std::erase_if(sent, [](const SigV4Header& header) { return iequals(header.name, "authorization"); });
  return sigv4_canonical_request(request.at("method").get<std::string>(), request.at("target").get<std::string>(),
                                 sent, payload_hash, s3)
      .value_or("");
}

nlohmann::json sign_one(const nlohmann::json& request) {
  std::vector<std::pair<std::string, std::string>> owned;
  for (const auto& pair : request.at("headers")) owned.emplace_back(pair.at(0), pair.at(1));
  std::vector<SigV4Header> headers;
  for (const auto& [name, value] : owned) headers.push_back({name, value});
  SigV4Policy policy;
  policy.regions = request.value("regions", std::vector<std::string>{});
  policy.services = request.value("services", std::vector<std::string>{});
  const std::string method = request.at("method");
  const std::string target = request.at("target");

  const SigV4Plan plan = sigv4_plan(target, headers, policy);
  if (plan.refusal) return refused(*plan.refusal);
  std::string payload_hash = plan.declared_payload;
  if (plan.needs_body()) {
    Sha256Hasher hasher;
    const std::string body = request.value("body", "");
    hasher.update(std::string_view(body).substr(0, body.size() / 2));  // in two pieces, as a held body comes
    hasher.update(std::string_view(body).substr(body.size() / 2));
    auto digest = hasher.hex_digest();
    if (!digest) return refused(SigV4Refusal::signer_failed);
    payload_hash = *digest;
  }
  SigV4Keys keys{request.at("access_key_id").get_ref<const std::string&>(),
                 request.at("secret_access_key").get_ref<const std::string&>(), std::nullopt};
  const auto token = request.find("session_token");
  if (token != request.end() && token->is_string()) keys.session_token = token->get_ref<const std::string&>();
  const SigV4Headers out = sigv4_sign(method, target, headers, plan, payload_hash, keys, request.at("time"));
  if (out.refusal) return refused(*out.refusal);
  nlohmann::json set = nlohmann::json::array();
  for (const auto& [name, value] : out.set) set.push_back({name, std::string(value.view())});
  return {{"remove", out.remove},
          {"set", set},
          {"region", plan.scope.region},
          {"service", plan.scope.service},
          {"canonical_request", canonical_after(request, headers, out, payload_hash, plan.s3)}};
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    try {
      std::cout << sign_one(nlohmann::json::parse(line)).dump() << '\n' << std::flush;
    } catch (const std::exception& e) {
      std::cerr << "sigv4_cli: bad request line: " << e.what() << '\n';
      return 2;
    }
  }
  return 0;
}
