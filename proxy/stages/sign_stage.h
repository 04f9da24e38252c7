// SPDX-License-Identifier: Apache-2.0
// SPEC §20 "Request signing": an endpoint's "sign" signs each request again with the session's
// secrets, after every other change (the last stage that changes the request), through the
// context's signer (request_signer.h). A request whose payload hash must be computed from its body
// waits: its caller holds the body (at most --max-held-body), hashes it and runs the pipeline again
// with context.payload_hash set. Where there is no signer (plain HTTP in serve, which holds no
// secret) a signing endpoint's every request is `secret missing`: a key never signs in clear text.
// The head limit counts the headers the signer adds (`head too large`, 431, nothing sent).
#pragma once

#include "proxy/stages/request_stage.h"

namespace boxproxy {

class SignStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "sign"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

// SPEC §20: on a signing endpoint a presigned URL (X-Amz-Signature or X-Amz-Credential in the
// query) is `request denied`, before the misdirected stage reads the query: the box's presigned
// URL carries its placeholder key in X-Amz-Credential, and the answer must say what was refused
// (a URL the proxy will not sign), not a placeholder it could never have placed anywhere else.
class PresignedStage final : public RequestStage {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "presigned"; }
  [[nodiscard]] StageVerdict on_request(RequestContext& context) const override;
};

}  // namespace boxproxy
