// SPDX-License-Identifier: Apache-2.0
// Where a placeholder is swapped for its secret's value, and where it is a tripwire (SPEC §19a).
// Pure: the values come through a SecretLookup, the placeholders from table/placeholder.h, the
// places from the endpoint's "secrets" (table/inspect_endpoint.h's secret_places_of).
//
// A secret NAME the endpoint lists is swapped only at its places:
//   - "authorization": the Authorization header whose whole value is NAME's placeholder, or whose
//     `Bearer` or `token` credential is, or whose `Basic` credential (standard base64, padded)
//     decodes to "user:password" with the placeholder as the whole user or the whole password
//     (decoded, swapped, encoded again: git and other Basic clients send a token so);
//   - "header:<name>": every occurrence, as made, in the value of every header of that name;
//   - "query:<param>": that query parameter's value, when the placeholder is the whole value; the
//     value goes in percent-encoded (every byte outside letters, digits and "-._~"), so it can
//     never end the parameter or the target.
// Never in the path, never in a header name. What it stops: a box choosing the field the value
// lands in, and so the field an origin reflects back (a redirect's Location keeps the query of
// the request; a 404 quotes the path; X-Request-Id and CORS headers are echoed).
//
// A placeholder anywhere else in a request to that endpoint, or in any request to another
// destination, is `secret misdirected`: the request with every swappable occurrence blanked out
// (its "residue") is searched in every spelling table/placeholder.h knows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/http_head.h"
#include "proxy/wire/secret_lookup.h"
#include "table/inspect_endpoint.h"
#include "table/placeholder.h"
#include "table/secret_value.h"

namespace boxproxy {

// The size of `head` as an HTTP/1.1 request head: request line, each "name: value" line, and the
// blank line, CRLF each.
[[nodiscard]] std::size_t request_head_bytes(const RequestHead& head) noexcept;

// The name of a placeholder `head` carries anywhere but at one of its secret's places on
// `endpoint` (nowhere at all, for a secret the endpoint does not list), in any spelling: the
// request would hand it where it may not go (`secret misdirected`). nullopt when none. For a
// destination that swaps nothing (plain HTTP, say), pass an endpoint with no "secrets". On an
// endpoint with "sign", the headers the signer replaces (is_signer_replaced_header) are not read.
[[nodiscard]] std::optional<std::string> misdirected_placeholder(const RequestHead& head,
                                                                 const InspectEndpoint& endpoint,
                                                                 const Placeholders& placeholders);

// `head` with each placeholder swapped for its value at its places (above). The texts that hold a
// value are owned here (scrubbed when it goes); `head` is a view of them and of the original's
// other parts, valid while both live. Not movable: the views point into it.
//   - missing(): a secret a placeholder at its place stands for that is not set (the caller
//     refuses the request as `secret missing`, and sends nothing);
//   - too_large(): the swapped head would exceed `max_head_bytes` (request_head_bytes); swapping
//     stopped before building it, head() is the original, and the caller refuses the request as
//     `head too large` (431) before anything is sent. What it stops: placeholders multiplying a
//     head's size by a large value's (777 placeholders and a 4 KiB value made 32 KiB 3.1 MiB).
//   - swaps(): "NAME@PLACE" for each place a swap was made, once each, in order (the trace's
//     swap=): PLACE is "authorization", "header:<name>" or "query:<param>".
class SwappedHead {
 public:
  SwappedHead(const RequestHead& original, const InspectEndpoint& endpoint, const Placeholders& placeholders,
              const SecretLookup& secrets, std::size_t max_head_bytes = SIZE_MAX);
  SwappedHead(const SwappedHead&) = delete;
  SwappedHead& operator=(const SwappedHead&) = delete;

  [[nodiscard]] const RequestHead& head() const noexcept { return head_; }
  [[nodiscard]] bool target_changed() const noexcept { return target_changed_; }
  [[nodiscard]] const std::optional<std::string>& missing() const noexcept { return missing_; }
  [[nodiscard]] bool too_large() const noexcept { return too_large_; }
  // request_head_bytes of head() (of the original when too_large()).
  [[nodiscard]] std::size_t head_bytes() const noexcept { return head_bytes_; }
  [[nodiscard]] const std::vector<std::string>& swaps() const noexcept { return swaps_; }

 private:
  std::vector<SecretText> texts_;  // reserved once: never moved, so the views stay valid
  RequestHead head_;
  bool target_changed_ = false;
  bool too_large_ = false;
  std::size_t head_bytes_ = 0;
  std::optional<std::string> missing_;
  std::vector<std::string> swaps_;
};

}  // namespace boxproxy
