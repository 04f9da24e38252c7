// SPDX-License-Identifier: Apache-2.0
// A message head held as fields, not as HTTP/1.1 text (issue 34 item 2; HAProxy's HTX, nghttpx's
// Downstream): what the HTTP/2 sessions (H2Front toward the box, H2Back toward the origin) give the
// inspected exchange and take from it, so a head crossing between them is parsed once (from the
// HTTP/1.1 text of an HTTP/1.1 peer, or from an HTTP/2 header list) and written once (as text to an
// HTTP/1.1 peer, or as a header list), never printed to be parsed again.
//
// A message owns its bytes; view() gives the RequestHead or ResponseHead (proxy/wire/http_head.h)
// the stages and the rewrites already read, as views into the message, valid while the message
// lives unchanged. from() copies a parsed head's views into a message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/http_head.h"

namespace boxproxy {

struct MessageField {
  std::string name;   // as received (compare without regard to case)
  std::string value;  // spaces and tabs trimmed at both ends
};

struct RequestMessage {
  std::string method;
  std::string target;                  // origin-form as the request line would carry it
  std::string version = "HTTP/1.1";    // an HTTP/2 request is given as "HTTP/1.1"
  std::vector<MessageField> fields;    // Host first when the request had an authority

  [[nodiscard]] RequestHead view() const;
  [[nodiscard]] static RequestMessage from(const RequestHead& head);
  // The bytes its head would take as HTTP/1.1 text (the request line's record and bounds count it).
  [[nodiscard]] std::size_t text_size() const noexcept;
  // That text ("method target version\r\n", "name: value\r\n" a field, the blank line), made in one
  // allocation (text_size()): a head holding an injected secret leaves no freed copy of it behind.
  [[nodiscard]] std::string text() const;
};

struct ResponseMessage {
  unsigned status = 0;
  std::string reason;
  std::string version = "HTTP/1.1";
  std::vector<MessageField> fields;

  [[nodiscard]] ResponseHead view() const;
  [[nodiscard]] static ResponseMessage from(const ResponseHead& head);
  [[nodiscard]] std::size_t text_size() const noexcept;
};

// Overwrites every byte of `message` (table/secret_value.h's scrub) and frees it: a request head
// may hold an injected credential or a swapped secret (SPEC §19).
void scrub(RequestMessage& message) noexcept;

}  // namespace boxproxy
