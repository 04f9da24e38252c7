// SPDX-License-Identifier: Apache-2.0
// Bytes moved between an inspected connection's two sides (proxy/inspect/inspected_connection.h):
// a body through its cursor, within the output's bound, and the heads and answers queued, each
// counted for the request's record and the connection's end.
#include "proxy/inspect/inspected_connection.h"

#include <algorithm>
#include <new>

#include "proxy/inspect/packed_move.h"
namespace boxproxy {
namespace {

void add_or_throw(evbuffer* to, std::string_view bytes) {
  if (!bytes.empty() && evbuffer_add(to, bytes.data(), bytes.size()) == -1) throw std::bad_alloc();
}

// Where the response's stages put a body's bytes: a stretch they leave as it is moves from the
// origin's input to the box's output buffer to buffer (whole chains by their pointers), so a body
// the scrubber finds nothing in is not copied (bench/README.md: four copies of each piece before).
class EvbufferSink final : public BodySink {
 public:
  EvbufferSink(evbuffer* from, evbuffer* to) noexcept : from_(from), to_(to) {}
  void add(std::string_view bytes) override {
    add_or_throw(to_, bytes);
    count_ += bytes.size();
  }
  void pass(std::size_t count) override {
    move_packed(from_, to_, count);
    count_ += count;
  }
  void drop(std::size_t count) override { evbuffer_drain(from_, count); }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }

 private:
  evbuffer* from_;
  evbuffer* to_;
  std::size_t count_ = 0;  // bytes put into `to`
};

// `piece` (where it lies at the front of `from`: a body's next bytes as framed, of which take.pass
// go on and `ending` closes it) through the response's stages into `to`: what they release now,
// and, at the body's end, everything they held.
std::size_t pass_through_stages(evbuffer* from, evbuffer* to, std::string_view piece, const BodyCursor::Take& take,
                                ResponseChain& stages) {
  EvbufferSink sink(from, to);
  stages.on_body(piece.substr(0, take.pass), sink);  // `piece` is not read after this: the sink moved it
  evbuffer_drain(from, take.take - take.pass);
  if (take.done || !take.ending.empty()) {
    std::string out;
    stages.flush(out);
    std::string ending(take.ending);  // the trailer section, as a head
    if (!ending.empty()) stages.on_head(ending);
    out += ending;
    sink.add(out);
  }
  return sink.count();
}

}  // namespace

InspectedConnection::Moved InspectedConnection::move_body(evbuffer* from, evbuffer* to, BodyCursor& cursor,
                                                          std::uint64_t& count, ResponseChain* stages) {
  Moved out;
  for (;;) {
    const std::size_t queued = to != nullptr ? evbuffer_get_length(to) : 0;
    if (queued >= kMaxQueued) return out;
    evbuffer_iovec piece{};
    if (evbuffer_peek(from, -1, nullptr, &piece, 1) < 1 || piece.iov_len == 0) return out;
    const std::string_view bytes(static_cast<const char*>(piece.iov_base), std::min(piece.iov_len, kMaxQueued - queued));
    const BodyCursor::Take take = cursor.feed(bytes);
    if (take.malformed) {
      out.malformed = true;
      return out;
    }
    if (to != nullptr && stages != nullptr) {
      count += pass_through_stages(from, to, bytes, take, *stages);
    } else if (to != nullptr) {
      // Passed as framed, byte for byte; a chunked body's trailers are dropped and `ending` closes it.
      move_packed(from, to, take.pass);  // the queue's bound in bytes is one in memory too
      evbuffer_drain(from, take.take - take.pass);
      add_or_throw(to, take.ending);
      count += take.pass + take.ending.size();
    } else {
      evbuffer_drain(from, take.take);
    }
    if (take.take > 0) out.moved = true;
    if (take.done) {
      out.done = true;
      return out;
    }
    if (take.take < bytes.size()) return out;  // the cursor wants no more of it now
  }
}

InspectedConnection::Moved InspectedConnection::move_toward(Toward toward, BodyCursor& cursor) {
  const bool up = toward == Toward::origin;
  evbuffer* from = up ? client_in() : link_.in();
  evbuffer* to = up ? link_.out() : client_out();
  std::uint64_t count = 0;
  if (!up) renew_response_stages();
  ResponseChain* stages = up ? nullptr : exchange_.response_stages.get();
  const Moved moved = move_body(from, to, cursor, count, stages);
  if (stages != nullptr && moved.moved) watch_quiet_origin();
  if (up) {
    link_.count_sent(count);
  } else {
    box_.count_queued(count);
  }
  (up ? exchange_.record.up : exchange_.record.down) += count;
  return moved;
}

void InspectedConnection::queue_to_client(std::string_view bytes) {
  add_or_throw(client_out(), bytes);
  box_.count_queued(bytes.size());
  exchange_.record.down += bytes.size();
}

bool InspectedConnection::send_answer_head(ResponseMessage head, bool staged) {
  if (!h2()) {
    std::string text = head.text();
    if (staged && !exchange_.stage_head(text, kMaxResponseHeadBytes)) return false;
    queue_to_client(text);
    return true;
  }
  if (staged && !exchange_.stage_head(head, kMaxResponseHeadBytes)) return false;
  h2()->answer_head(head);
  // Counted as its text would be, so that the record reads the same whichever way the box spoke.
  const std::size_t size = head.text_size();
  box_.count_queued(size);
  exchange_.record.down += size;
  return true;
}

void InspectedConnection::queue_to_origin(std::string_view bytes) {
  add_or_throw(link_.out(), bytes);
  link_.count_sent(bytes.size());
  exchange_.record.up += bytes.size();
}

}  // namespace boxproxy
