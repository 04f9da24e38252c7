// SPDX-License-Identifier: Apache-2.0
// One request of an inspected connection through the stages (proxy/inspect/inspected_exchange_state.h):
// the hash of a body held for the signer (SPEC §20), and its response's stages (SPEC §19a).
#include "proxy/inspect/inspected_connection.h"

#include <event2/buffer.h>

#include <new>

#include "proxy/inspect/sigv4_signer.h"
#include "proxy/stages/scrub_stage.h"

namespace boxproxy {

std::optional<std::string> InspectedExchange::held_body_hash() const {
  // Hashed where it lies, one evbuffer chain at a time, never pulled up: the body may be as long as
  // --max-held-body (an operator may raise it to 1 GiB), and one contiguous copy of it would double
  // what is held and spend the loop on the copy besides the hash.
  evbuffer* body = held->body.get();
  const std::size_t length = evbuffer_get_length(body);
  const bool chunked = judged.framing.kind == BodyFraming::Kind::chunked;
  // AWS hashes the payload: a chunked body's data, not its framing. Decoded a slice at a time, so
  // the decoded copy never holds more than one slice's worth beside the held body.
  constexpr std::size_t kSlice = 16 * 1024;
  ChunkedDecoder decoder;
  Sha256Hasher hasher;
  std::string decoded;
  evbuffer_ptr at{};
  if (evbuffer_ptr_set(body, &at, 0, EVBUFFER_PTR_SET) != 0) return std::nullopt;
  std::size_t seen = 0;
  while (seen < length) {
    evbuffer_iovec piece{};
    if (evbuffer_peek(body, -1, &at, &piece, 1) < 1 || piece.iov_len == 0) break;
    std::string_view rest(static_cast<const char*>(piece.iov_base), piece.iov_len);
    if (!chunked) hasher.update(rest);
    while (chunked && !rest.empty() && !decoder.done() && !decoder.malformed()) {
      const std::size_t taken = decoder.feed(rest.substr(0, kSlice), decoded);
      hasher.update(decoded);
      decoded.clear();
      if (taken == 0) break;
      rest.remove_prefix(taken);
    }
    seen += piece.iov_len;
    if (evbuffer_ptr_set(body, &at, piece.iov_len, EVBUFFER_PTR_ADD) != 0) break;
  }
  // A body not read to its end (every byte of it, and for a chunked one its last chunk) would be
  // sent whole with the hash of a part of it: refused instead (found in review; the framing was
  // checked as it was held, so this fails closed on what cannot happen).
  if (seen != length || (chunked && !decoder.done())) return std::nullopt;
  return hasher.hex_digest();
}

void InspectedExchange::start_response_stages(ScrubSource* source) {
  response_stages.reset();
  scrub = nullptr;
  if (source == nullptr) return;
  // Every response of a session that holds a secret, on every inspected endpoint: an origin may
  // keep a value one endpoint was given and hand it back through another.
  std::shared_ptr<const ScrubPatterns> patterns = source->patterns();
  if (!patterns) return;
  auto stage = std::make_unique<ScrubStage>(std::move(patterns));
  scrub = stage.get();
  response_stages = std::make_unique<ResponseChain>();
  response_stages->add(std::move(stage));
}

void InspectedExchange::renew_response_stages(ScrubSource* source, std::string& out) {
  if (source == nullptr) return;
  std::shared_ptr<const ScrubPatterns> now = source->patterns();  // the same, unless a secret changed
  const ScrubPatterns* was = scrub != nullptr ? scrub->patterns() : nullptr;
  if (now.get() == was) return;
  // A stream open for hours (server-sent events, a WebSocket) must not carry a value set after it
  // began: what comes from here on is searched for the secrets in force now.
  if (scrub == nullptr) {
    start_response_stages(source);
    return;
  }
  scrub->renew(std::move(now), out);
}

bool InspectedExchange::stage_head(std::string& text, std::size_t most) {
  if (response_stages) response_stages->on_head(text);
  // A match becomes the longer placeholder: a head of many short matches could grow five-fold,
  // past what the box side (and the HTTP/2 front) takes. Such a head is the origin's fault.
  return text.size() <= most;
}

bool InspectedExchange::stage_head(ResponseMessage& head, std::size_t most) {
  if (response_stages && !response_stages->on_head(head)) return false;
  return head.text_size() <= most;
}

void InspectedExchange::flush_response_stages(std::string& out) {
  if (response_stages && response_stages->held() > 0) response_stages->flush(out);
}

}  // namespace boxproxy
