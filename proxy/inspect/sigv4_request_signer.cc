// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/sigv4_request_signer.h"

#include <ctime>

#include "proxy/inspect/sigv4_signer.h"
#include "proxy/stages/request_context.h"

namespace boxproxy {
namespace {

// The keys the endpoint names, or none when one is not set (the request is then `secret missing`:
// never sent signed with an empty key, nor with the box's own signature).
struct KeysOrMissing {
  SigV4Keys keys;
  bool missing = false;
};

KeysOrMissing keys_of(const SignAwsSigV4& sign, const SecretLookup& secrets) {
  KeysOrMissing out;
  const auto access = secrets.secret(sign.access_key_id);
  const auto secret = secrets.secret(sign.secret_access_key);
  std::optional<std::string_view> token;
  if (sign.session_token) token = secrets.secret(*sign.session_token);
  if (!access || !secret || (sign.session_token && !token)) {
    out.missing = true;
    return out;
  }
  out.keys = SigV4Keys{*access, *secret, token};
  return out;
}

bool body_empty(const BodyFraming& framing) noexcept {
  return framing.kind == BodyFraming::Kind::none || (framing.kind == BodyFraming::Kind::length && framing.length == 0);
}

class SigV4RequestSigner final : public RequestSigner {
 public:
  SignAnswer sign(RequestContext& context) const override {
    const SignAwsSigV4& sign = *context.endpoint.sign;
    const KeysOrMissing keys = keys_of(sign, context.secrets);
    if (keys.missing) return {SignAnswer::Kind::refused, Reason::secret_missing};
    const std::string host = origin_host_field(context.origin);
    const std::vector<HeaderField> fields = outgoing_fields(context, host);
    std::vector<SigV4Header> headers;
    headers.reserve(fields.size());
    for (const HeaderField& field : fields) headers.push_back({field.name, field.value});
    const std::string_view target = context.outgoing().target;
    const SigV4Policy policy{sign.regions, sign.services};
    const SigV4Plan plan = sigv4_plan(target, headers, policy);
    // A presigned URL, no SigV4 of the box's, SigV4a, a scope outside the lists, a credential
    // service, signed chunks: never signed (sigv4_canonical.h says what each stops).
    if (plan.refusal) return {SignAnswer::Kind::refused, Reason::request_denied};
    std::string_view payload_hash = plan.declared_payload;
    if (plan.needs_body()) {
      if (context.payload_hash) {
        payload_hash = *context.payload_hash;
      } else if (body_empty(context.framing)) {
        payload_hash = kEmptyPayloadSha256;  // nothing to hold
      } else {
        return {SignAnswer::Kind::needs_body, Reason::request_denied};
      }
    }
    SigV4Headers out = sigv4_sign(context.outgoing().method, target, headers, plan, payload_hash, keys.keys,
                                  static_cast<std::int64_t>(std::time(nullptr)));
    if (out.refusal) return {SignAnswer::Kind::refused, Reason::request_denied};
    for (std::string& name : out.remove) context.dropped_fields.push_back(std::move(name));
    for (auto& field : out.set) context.injected.fields.push_back(std::move(field));
    // A held body follows its head at once, and the proxy answered the box's 100 Continue itself
    // (inspected_held_body.cc): the origin is not asked to wait (nor to send a second one).
    if (context.payload_hash) context.dropped_fields.emplace_back("expect");
    return {SignAnswer::Kind::signed_request, Reason::request_denied};
  }

  bool presigned(std::string_view target) const override {
    const std::size_t query = target.find('?');
    return query != std::string_view::npos && is_presigned_query(target.substr(query + 1));
  }
};

}  // namespace

const RequestSigner& sigv4_request_signer() noexcept {
  static const SigV4RequestSigner signer;
  return signer;
}

}  // namespace boxproxy
