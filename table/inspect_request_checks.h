// SPDX-License-Identifier: Apache-2.0
// Checks of a request to an inspected endpoint that SPEC §19a adds beside the rules, each pure:
// the request pipeline (proxy/wire, proxy/inspect) calls them with what it parsed.
//
//   - Framing: a GET or HEAD with a body is `bad framing`, unless the endpoint's "get-bodies" is
//     true. An origin that ignores a GET's body would read those bytes as the next request, one no
//     rule judged (request smuggling); an origin that reads it (Elasticsearch and OpenSearch search
//     with GET bodies) is the operator's to name.
// (TRACE on an endpoint that injects or swaps is the coding stage's: proxy/stages/coding_stage.h.)
#pragma once

#include <cstdint>
#include <string_view>

#include "table/inspect_endpoint.h"

namespace boxproxy {

// Whether `method` (any case: an origin that reads "get" as GET must not be reached past this) is
// GET or HEAD and the request carries a body: `content_length` above 0, or `chunked` (a
// Transfer-Encoding: chunked request, or an HTTP/2 stream with DATA and no content-length, which
// the proxy sends on as chunked). A Content-Length of 0 is no body.
[[nodiscard]] bool is_get_or_head_with_body(std::string_view method, std::uint64_t content_length,
                                            bool chunked) noexcept;

// Whether `endpoint` refuses the request as `bad framing` (SPEC §19a): is_get_or_head_with_body,
// unless the endpoint says "get-bodies": true. Judged before the rules, in both modes.
[[nodiscard]] bool get_body_refused(const InspectEndpoint& endpoint, std::string_view method,
                                    std::uint64_t content_length, bool chunked) noexcept;

}  // namespace boxproxy
