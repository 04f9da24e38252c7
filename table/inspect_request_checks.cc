// SPDX-License-Identifier: Apache-2.0
#include "table/inspect_request_checks.h"

#include "table/ascii.h"

namespace boxproxy {

bool is_get_or_head_with_body(std::string_view method, std::uint64_t content_length, bool chunked) noexcept {
  if (!iequals(method, "GET") && !iequals(method, "HEAD")) return false;
  return content_length > 0 || chunked;
}

bool get_body_refused(const InspectEndpoint& endpoint, std::string_view method, std::uint64_t content_length,
                      bool chunked) noexcept {
  // The operator's word that this origin reads GET bodies: then the body is part of the request
  // the rules judged, not a second one.
  if (endpoint.get_bodies) return false;
  return is_get_or_head_with_body(method, content_length, chunked);
}

}  // namespace boxproxy
