// SPDX-License-Identifier: Apache-2.0
// What a refused request's body says after its words (SPEC §6 fixes the first line, "egress
// refused: <class>"; what follows is ours): the endpoint, method and path that were judged, so that
// a client that shows only the status (git shows "403") still has, in the body, what to act on;
// and, when the endpoint says "hint": true, what its rules allow. Pure.
//
//   egress refused: request denied
//   judged: DELETE /repos/acme/widget at endpoint api.github.com:443
//   allowed: GET /repos/acme/**; HEAD /repos/acme/** (denied first: * /repos/*/*/hooks/**)
//
// The path is the box's own input, reflected to the box only: it is cut at the query (never sent
// back, as it is never logged), at kMaxJudgedPathBytes, and every byte outside visible ASCII is
// written %XX, so the body stays one line of text whatever the box sent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "table/inspect_endpoint.h"
#include "table/reason.h"

namespace boxproxy {

// The most of a path the "judged:" line carries; past it, "..." follows.
inline constexpr std::size_t kMaxJudgedPathBytes = 256;
// The most of the rules the "allowed:" line carries; past it, the rules left out are counted.
inline constexpr std::size_t kMaxHintBytes = 2048;

// The path of `target` (a request line's target) without its query or fragment, cut and made
// visible ASCII as above.
[[nodiscard]] std::string judged_path_text(std::string_view target);

// "judged: METHOD PATH at endpoint HOST:PORT\n", and for request denied on an endpoint with
// "hint": true, "allowed: ...\n" (allowed_text). Every line ends in "\n".
[[nodiscard]] std::string refusal_detail(const InspectEndpoint& endpoint, std::string_view method,
                                         std::string_view target, Reason refusal);

// What `endpoint`'s rules allow, in words: "every method and path", "GET, HEAD, OPTIONS on any
// path (read-only)", "METHODS GLOB; ..." or "nothing", then "(denied first: METHODS GLOB; ...)"
// when it has deny entries. At most about kMaxHintBytes.
[[nodiscard]] std::string allowed_text(const InspectEndpoint& endpoint);

}  // namespace boxproxy
