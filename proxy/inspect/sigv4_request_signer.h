// SPDX-License-Identifier: Apache-2.0
// The inspector's request signer (proxy/stages/request_signer.h) for an endpoint's
// "sign": {"aws-sigv4": {...}} (SPEC §20): the request as it leaves, planned (sigv4_plan) and
// signed (sigv4_sign) with the session's secrets the endpoint names, at the proxy's clock.
#pragma once

#include "proxy/stages/request_signer.h"

namespace boxproxy {

// The one signer (stateless), for judge_inspected_request.
[[nodiscard]] const RequestSigner& sigv4_request_signer() noexcept;

// The lower-case hex SHA-256 of no bytes: the payload hash of a request without a body.
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace boxproxy
