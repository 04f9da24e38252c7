// SPDX-License-Identifier: Apache-2.0
// What the sign stage (sign_stage.h) asks to sign a request (SPEC §20, "Request signing"). An
// interface, so that the stages stay pure and free of OpenSSL: the inspector gives the AWS SigV4
// signer (proxy/inspect/sigv4_request_signer.h); serve and check give none, and a signing
// endpoint's request is then `secret missing` there (they hold no secret).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/http_head.h"
#include "table/reason.h"

namespace boxproxy {

struct RequestContext;

struct SignAnswer {
  enum class Kind : std::uint8_t {
    signed_request,  // the signature's headers were added to the context (injected, dropped_fields)
    needs_body,      // the payload hash is the body's: hold it, hash it, set payload_hash, run again
    refused,         // `reason`; nothing is sent
  };
  Kind kind = Kind::refused;
  Reason reason = Reason::request_denied;
};

class RequestSigner {
 public:
  virtual ~RequestSigner() = default;
  // Signs `context`'s request as it will leave (outgoing_fields, below, and the outgoing target),
  // with context.payload_hash when the body had to be hashed.
  [[nodiscard]] virtual SignAnswer sign(RequestContext& context) const = 0;
  // Whether `target` carries a signature of its own in its query (a presigned URL), which the proxy
  // cannot sign again: refused before the placeholder check (PresignedStage, sign_stage.h).
  [[nodiscard]] virtual bool presigned(std::string_view target) const = 0;

 protected:
  RequestSigner() = default;
  RequestSigner(const RequestSigner&) = default;
  RequestSigner& operator=(const RequestSigner&) = default;
};

// The request's headers as the origin will get them, from what the stages before decided: the
// box's (placeholders swapped) without those of an injected or dropped name and without its Host,
// then "host" (the decided origin's, `host_field`), the added fields and the injected ones. Views
// into the context and `host_field`, valid while both are unchanged.
[[nodiscard]] std::vector<HeaderField> outgoing_fields(const RequestContext& context, const std::string& host_field);

}  // namespace boxproxy
