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
  // The head as HTTP/1.1 text ("METHOD target version\r\n", "name: value\r\n" each, the blank
  // line): for an HTTP/1.1 peer, and for tests. text().size() == text_size(), one allocation: a head
  // holding an injected secret leaves no freed copy of it behind.
  [[nodiscard]] std::string text() const;
  // What holding it costs, for a bound on heads held (H2Front's waiting heads): its text and each
  // field's own object (two strings), which the text does not count. What it stops: a head of many
  // empty fields ("a:" is a five-byte line, a 64-byte field) holding 13 times what it is counted as
  // (found in review: 26 waiting heads of 980 empty fields each held 1.5 MiB under a 128 KiB bound).
  [[nodiscard]] std::size_t held_size() const noexcept { return text_size() + fields.size() * sizeof(MessageField); }
};

struct ResponseMessage {
  unsigned status = 0;
  std::string reason;
  std::string version = "HTTP/1.1";
  std::vector<MessageField> fields;

  [[nodiscard]] ResponseHead view() const;
  [[nodiscard]] static ResponseMessage from(const ResponseHead& head);
  [[nodiscard]] std::size_t text_size() const noexcept;
  // The head as HTTP/1.1 text ("version status reason\r\n", the fields, the blank line): what an
  // HTTP/1.1 box gets. text().size() == text_size() for a status of three digits.
  [[nodiscard]] std::string text() const;
  // What holding it costs, for a bound on heads held (H2Back's heads not yet taken), as
  // RequestMessage::held_size: its text and each field's own object.
  [[nodiscard]] std::size_t held_size() const noexcept { return text_size() + fields.size() * sizeof(MessageField); }
};

// Overwrites every byte of `message` (table/secret_value.h's scrub) and frees it: a request head
// may hold an injected credential or a swapped secret (SPEC §19).
void scrub(RequestMessage& message) noexcept;

}  // namespace boxproxy
