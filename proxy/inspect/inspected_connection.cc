// SPDX-License-Identifier: Apache-2.0
// One inspected connection (proxy/inspect/inspected_connection.h): its set-up, the owner's calls,
// libevent's callbacks and what each side may read, the hooks, the timer, and the state machine's
// loop. Its steps are in files of their own: the box-facing steps (inspected_client_side.cc), the
// origin-facing steps (inspected_origin_side.cc), a request judged and forwarded with its response
// (inspected_exchange.cc, inspected_held_body.cc, inspected_response_stages.cc), the WebSocket
// relay (inspected_relay.cc), bytes moved between the sides (inspected_bytes.cc), and refusals,
// records and ends (inspected_ends.cc). The objects it holds are in theirs: inspected_box_side,
// inspected_origin_link, inspected_exchange_state, inspected_asks.
#include "proxy/inspect/inspected_connection.h"

#include <algorithm>
#include <new>

namespace boxproxy {
namespace {

// Steps advance() takes per wake-up before it yields to the loop (and kicks itself to go on): one
// client's pipelined requests never hold the loop for long.
constexpr int kMaxStepsPerWake = 64;
// The least the box-facing input may hold before its reading stops, whatever --max-head-bytes is:
// one TLS record.
constexpr std::size_t kMinClientInputBound = 16 * 1024;
// The least a timer is armed for: a time already up fires on the loop's next turn (arming for
// zero would disarm it).
constexpr double kSoonestSeconds = 1e-3;
// How long an HTTP/2 connection that is closing waits, once its last frame is out, for the box to
// close first (inspected_ends.cc): long enough for a box on the same host to read a GOAWAY, short
// enough that a box which never closes holds nothing for long. Its bytes meanwhile are dropped.
constexpr double kH2LingerSeconds = 2;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Set-up.

std::unique_ptr<InspectedConnection> InspectedConnection::start(event_base* base, UniqueFd client, UniqueFd upstream,
                                                                InspectedSetup setup, Hooks hooks) {
  if (base == nullptr || !client.valid() || !setup.endpoint || !setup.leaf ||
      !setup.leaf->certificate || setup.leaf_key == nullptr || setup.client_ctx == nullptr ||
      setup.origin_ctx == nullptr || hooks.request == nullptr || hooks.need_upstream == nullptr ||
      hooks.ended == nullptr) {
    return nullptr;
  }
  try {
    std::unique_ptr<InspectedConnection> connection(
        new InspectedConnection(base, std::move(client), std::move(setup), hooks));
    if (!connection->init(std::move(upstream))) return nullptr;
    return connection;
  } catch (const std::bad_alloc&) {
    return nullptr;  // the sockets, moved into the parameters, close here
  }
}

InspectedConnection::InspectedConnection(event_base* base, UniqueFd client, InspectedSetup setup, Hooks hooks)
    : base_(base),
      setup_(std::move(setup)),
      hooks_(hooks),
      timer_(base, &on_timer, this),
      box_(std::move(client), setup_.host),
      link_(base, &on_quiet_origin, this) {}

bool InspectedConnection::init(UniqueFd upstream) {
  if (!link_.decide(setup_.host, setup_.port)) return false;
  kick_event_ = make_event(base_, -1, 0, &on_kick, this);
  if (!kick_event_ || !timer_.valid() || !link_.valid()) return false;
  if (!box_.watch(base_, &on_sniff, this)) return false;
  if (!start_origin(std::move(upstream))) return false;
  arm(TimerRole::handshake);
  return true;
}

InspectedConnection::~InspectedConnection() {
  if (due_.alive != nullptr) *due_.alive = false;
  scrub(exchange_.judged.upstream);  // an injected credential (SPEC §19) is not left in the heap
}

// ---------------------------------------------------------------------------------------------
// The owner's calls: each records what changed and kicks; the work (and any hook) follows from the
// loop, so the owner is never called back from inside its own call.

void InspectedConnection::give_upstream(UniqueFd fd) {
  // Not asked for (an origin connection is open, or the connection is ending): `fd` closes here.
  if (phase_ == Phase::ended || phase_ == Phase::closing || link_.stream() != nullptr) return;
  if (!open_origin_tls(std::move(fd))) link_.fail_tls(TlsFailure::error);
  kick();
}

void InspectedConnection::upstream_failed() {
  if (link_.state() != InspectedOriginLink::State::asked) return;
  link_.set_state(InspectedOriginLink::State::dial_failed);
  kick();
}

void InspectedConnection::set_endpoint(std::shared_ptr<const InspectEndpoint> endpoint) {
  setup_.endpoint = std::move(endpoint);
  kick();
}

void InspectedConnection::kick() noexcept {
  if (kick_event_) event_active(kick_event_.get(), EV_TIMEOUT, 0);
}

// ---------------------------------------------------------------------------------------------
// libevent's callbacks. Each acts on what happened, then settles: advances the state machine and
// delivers the hooks it queued. Nothing runs after settle(): the owner may have deleted us.

template <class Act>
void InspectedConnection::act_then_settle(Act act) noexcept {
  try {
    act();
  } catch (...) {  // std::bad_alloc: this connection ends, the process goes on
    end_now(TunnelEnd::error);
  }
  settle();
}

void InspectedConnection::on_sniff(evutil_socket_t, short, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->act_then_settle([c] { c->sniff(); });
}

void InspectedConnection::on_kick(evutil_socket_t, short, void* self) noexcept {
  static_cast<InspectedConnection*>(self)->settle();
}

void InspectedConnection::on_client_io(bufferevent*, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->last_activity_ = Clock::now();
  c->settle();
}

void InspectedConnection::on_client_event(bufferevent*, short what, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->act_then_settle([c, what] { c->client_event(what); });
}

void InspectedConnection::on_origin_io(bufferevent* bev, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  if (!c->link_.is(bev)) return;  // a side dropped since
  c->last_activity_ = Clock::now();
  c->settle();
}

void InspectedConnection::on_origin_event(bufferevent* bev, short what, void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  if (!c->link_.is(bev)) return;
  c->act_then_settle([c, what] { c->link_.event(what); });
}

void InspectedConnection::on_quiet_origin(void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->act_then_settle([c] {
    // Only a quiet origin releases the hold: bytes of its waiting here mean the box is the one not
    // reading, and a release then would let the box choose where a value is cut (found in review).
    if (c->phase_ != Phase::exchanging && c->phase_ != Phase::relaying) return;
    if (c->link_.has_unread()) return;
    c->release_held_response();
  });
}

void InspectedConnection::on_timer(void* self) noexcept {
  auto* c = static_cast<InspectedConnection*>(self);
  c->act_then_settle([c] { c->timer_fired(); });
}

void InspectedConnection::settle() noexcept {
  // What this turn queues to a side goes out as one TLS record and one write when it can
  // (TlsStream::hold_writes): a small response's head and body, a request's head and body.
  if (box_.stream()) box_.stream()->hold_writes();
  link_.hold_writes();
  try {
    advance();
  } catch (...) {  // std::bad_alloc: this connection ends, the process goes on
    box_.abort();
    end_now(TunnelEnd::error);
  }
  if (box_.stream()) box_.stream()->release_writes();
  link_.release_writes();
  update_reading();
  deliver_hooks();
}

// Each side reads only while its input is under its bound and what it feeds has room (SPEC §18's
// bounds): a side whose peer does not take its bytes is not read, so nothing grows without end
// whatever either side does. Asked after every step, as anything may have drained or filled.
void InspectedConnection::update_reading() noexcept {
  if (phase_ == Phase::ended) return;
  TlsStream* const client = box_.stream();
  const bool origin_room = link_.has_room();
  const bool client_room = client != nullptr && evbuffer_get_length(client_out()) < kMaxQueued;
  if (client != nullptr && h2()) {
    // Over HTTP/2 the front takes every byte read at once; what they may add is bounded by the
    // front (streams, windows, held heads), and nothing is read while the frames it must write
    // back have no room.
    // Closing, it reads (and the front drops) what the box still sends, so that the close is not
    // a reset that could cost the box the answers it has not read yet.
    client->set_reading(client->output_length() < kMaxQueued && (h2()->wants_read() || phase_ == Phase::closing));
  } else if (client != nullptr) {
    bool want = client->input_length() < std::max(setup_.max_head_bytes + 1, kMinClientInputBound);
    switch (phase_) {
      case Phase::reading_head:
        want = want && client->output_length() < kMaxQueued;  // its answers go out before another head is read
        break;
      case Phase::exchanging:
        want = want && (exchange_.request_done || origin_room);
        break;
      case Phase::relaying:
        want = want && origin_room;
        break;
      case Phase::closing:
      case Phase::asking:  // the body stays with the box until the supervisor says yes
        want = false;
        break;
      default:
        break;
    }
    client->set_reading(want);
  }
  if (link_.stream() != nullptr) {
    bool want = link_.may_read();
    if (phase_ == Phase::exchanging || phase_ == Phase::relaying) want = want && client_room;
    if (phase_ == Phase::closing) want = false;
    link_.set_reading(want);  // between requests it reads, to see the origin close
  }
}

void InspectedConnection::deliver_hooks() noexcept {
  bool alive = true;
  due_.alive = &alive;
  while (!due_.records.empty()) {
    const InspectorRequest record = std::move(due_.records.front());
    due_.records.pop_front();
    hooks_.request(hooks_.owner, record);
    if (!alive) return;
  }
  while (!due_.asks.empty()) {
    const InspectorAsk ask = std::move(due_.asks.front());
    due_.asks.pop_front();
    hooks_.ask(hooks_.owner, ask);
    if (!alive) return;
  }
  if (due_.need_upstream) {
    due_.need_upstream = false;
    hooks_.need_upstream(hooks_.owner);
    if (!alive) return;
  }
  due_.alive = nullptr;
  if (due_.ended) {
    const InspectorEnded record = *due_.ended;
    due_.ended.reset();
    hooks_.ended(hooks_.owner, record);  // the last hook: the owner may delete us in it
  }
}

void InspectedConnection::timer_fired() {
  if (phase_ == Phase::ended) return;
  const auto quiet_for = [&](double limit) {
    const double quiet = Clock::seconds_since(last_activity_);
    if (quiet < limit) {
      timer_.arm(limit - quiet);
      return false;
    }
    return true;
  };
  switch (timer_role_) {
    case TimerRole::none:
      return;
    case TimerRole::handshake:
      if (phase_ == Phase::handshaking) box_.note_tls_failure(TlsFailure::timeout);
      end_now(TunnelEnd::idle_timeout);  // the box did not finish its handshake in time
      return;
    case TimerRole::head: {
      // No head in time, or the box idle as long as a tunnel may be: either ends the connection,
      // so that an inspected tunnel is held no longer than an opaque one would be.
      const double left = head_wait_left();
      if (asks_.any_parked()) {
        arm(TimerRole::head);  // streams wait for the supervisor: --ask-timeout bounds that wait
      } else if (left > 0) {
        timer_.arm(std::max(left, kSoonestSeconds));
      } else if (h2()) {
        close_after_flush(TunnelEnd::idle_timeout);  // GOAWAY first: a box reusing it learns it is gone
      } else {
        end_now(TunnelEnd::idle_timeout);
      }
      return;
    }
    case TimerRole::upstream:
      // No origin connection in time: a handshake that never ends is `upstream tls`; serve's dial
      // never answered is `dial failed` (the request gets its 502 either way).
      if (link_.state() == InspectedOriginLink::State::handshaking) {
        link_.fail_tls(TlsFailure::timeout);
      } else if (link_.state() == InspectedOriginLink::State::asked) {
        link_.set_state(InspectedOriginLink::State::dial_failed);
      }
      return;
    case TimerRole::drain:
      if (quiet_for(setup_.head_timeout)) end_now(TunnelEnd::idle_timeout);
      return;
    case TimerRole::idle:
      if (quiet_for(setup_.idle_timeout)) end_now(TunnelEnd::idle_timeout);
      return;
    case TimerRole::linger:
      end_now(closing_end_.value_or(TunnelEnd::error));
      return;
  }
}

void InspectedConnection::arm(TimerRole role) {
  timer_role_ = role;
  switch (role) {
    case TimerRole::none:
      timer_.disarm();
      return;
    case TimerRole::head:
      head_wait_started_ = Clock::now();
      timer_.arm(std::max(head_wait_left(), kSoonestSeconds));
      return;
    case TimerRole::handshake:
    case TimerRole::upstream:
    case TimerRole::drain:
      timer_.arm(setup_.head_timeout);
      return;
    case TimerRole::idle:
      timer_.arm(setup_.idle_timeout);  // 0: none (disarms)
      return;
    case TimerRole::linger:
      timer_.arm(kH2LingerSeconds);
      return;
  }
}

double InspectedConnection::head_wait_left() const noexcept {
  double left = setup_.head_timeout - Clock::seconds_since(head_wait_started_);
  if (setup_.idle_timeout > 0) left = std::min(left, setup_.idle_timeout - Clock::seconds_since(last_activity_));
  return left;
}

// ---------------------------------------------------------------------------------------------
// The state machine.

void InspectedConnection::advance() {
  for (int steps = 0; steps < kMaxStepsPerWake; ++steps) {
    if (!step()) return;
  }
  kick();  // more to do: on the loop's next turn, after the other connections had theirs
}

bool InspectedConnection::step() {
  if (phase_ == Phase::ended) return false;
  const bool pumped = h2() && pump_h2();
  if (phase_ == Phase::ended) return false;
  const bool pumped_back = link_.pump();
  return step_phase() || pumped || pumped_back;
}

bool InspectedConnection::pump_h2() {
  if (!box_.stream()) return false;
  const H2Front::Pumped pumped = h2()->pump(box_.stream()->input(), box_.stream()->output(), kMaxQueued);
  // The session is over (the box broke the protocol, the front cannot go on, or both sides said
  // GOAWAY): what is queued goes out, then the connection ends.
  if (!pumped.alive && phase_ != Phase::closing) {
    close_after_flush(TunnelEnd::client_closed);
    return true;
  }
  if (pumped.abandon && phase_ != Phase::closing) {
    abandon_h2_exchange();
    return true;
  }
  return pumped.progress;
}

void InspectedConnection::abandon_h2_exchange() {
  // Its request may have gone up in part: that origin connection is never used again (the next
  // request asks for another), so no byte of a later stream can complete it.
  if (phase_ == Phase::exchanging) link_.drop_as(InspectedOriginLink::State::gone);
  if (exchange_open()) record_exchange();  // its line, as it stands (status 0 when no answer began)
  // An answer to the stream's ask that came before the box reset it is the stream's alone: left,
  // it would be taken for the next stream's (found in review).
  asks_.forget_answer();
  h2()->abandon_current();
  if (phase_ == Phase::exchanging || phase_ == Phase::waiting_upstream || phase_ == Phase::refusing ||
      phase_ == Phase::holding_body) {
    phase_ = Phase::reading_head;
    arm(TimerRole::head);
  }
}

bool InspectedConnection::step_phase() {
  // An origin connection that closed between requests is dropped, and so is one that speaks out of
  // turn (what it sends unasked must never be taken for the next answer); the next request asks
  // for another.
  if (link_.state() == InspectedOriginLink::State::ready && phase_ != Phase::exchanging &&
      phase_ != Phase::relaying && link_.stale()) {
    link_.drop_as(InspectedOriginLink::State::gone);
    return true;
  }
  switch (phase_) {
    case Phase::sniffing:
    case Phase::handshaking:
    case Phase::ended:
      return false;
    case Phase::reading_head:
      return read_head();
    case Phase::refusing:
      return drop_refused_body();
    case Phase::holding_body:
      return hold_body();
    case Phase::asking:
      return asks_.answered() && read_head();  // the held head, judged again with its answer
    case Phase::waiting_upstream:
      return wait_for_origin();
    case Phase::exchanging:
      return exchange();
    case Phase::relaying:
      return relay();
    case Phase::closing:
      return close_when_flushed();
  }
  return false;
}

}  // namespace boxproxy
