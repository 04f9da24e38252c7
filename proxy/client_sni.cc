// ClientConnection, part 5: the SNI and Host checks (SPEC §16). With a host list in force, a
// tunnel to a name starts with the client's bytes held, and two pure readers look at them:
// proxy/sni.h until it knows whether they are a TLS ClientHello and what its server_name says;
// if they are not TLS, proxy/tunnel_host.h until it knows whether they are an HTTP/1.x request
// and, once its head has ended, what its target and Host say. A ClientHello naming another host
// than the one decided (or one that cannot be read within its bound) closes the tunnel as
// `sni mismatch`; an HTTP/1.x request naming another host or port, or none, or one that cannot be
// read strictly within --max-head-bytes, closes it as `host mismatch`; either before a server
// could act on it (a ClientHello is held whole; of a request, at most its first line's bytes before
// its line end went up). Anything else is handed to the tunnel and relayed, untouched from then on.
//
// What it stops: a box allowed `good.example` dialling that name's address (a CDN, a shared host)
// and asking the server there, in the ClientHello or in a cleartext request's Host, for a site the
// list does not hold. Only the first request is read: later ones on the same connection pass.
//
// While the checks wait, the tunnel already runs the other way: a server that speaks first (SMTP,
// SSH on a listed port) is heard, and the client, which answers it, is then read. The idle timer
// is the tunnel's: held bytes are not activity, so a client that never completes its ClientHello
// or request head (however slowly it dribbles it) is closed like a silent one, and it never holds
// more than kMaxSniHoldBytes or --max-head-bytes.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "proxy/client_connection.h"
#include "proxy/proxy_server.h"

namespace boxproxy {

bool ClientConnection::tunnel_check_applies() const noexcept {
  const ProxyConfig& config = server_.config();
  // Only a name has something to compare with an SNI or a Host. With a host list every allowed
  // target is a name (an IP literal is not-listed), so an address is never checked; without a
  // list nothing narrows the box's names, and any site is as good as the name it could ask for
  // directly. --no-sni-check turns off both checks.
  return config.sni_check && config.policy.allow.has_value() && target_.is_name();
}

// The tunnel starts here once its reply is queued: `inbox_` holds the client's early bytes.
ClientConnection::Next ClientConnection::start_tunnel() {
  if (tunnel_check_applies()) {
    sni_.reset(new (std::nothrow) SniReader);
    host_check_.reset(new (std::nothrow)
                          TunnelHostReader(target_.host, target_.port, server_.config().max_head_bytes));
    if (!sni_ || !host_check_) return Next::close;
    FirstBytes check = check_first_bytes(inbox_);
    // A client that already half-closed sends nothing more: what it sent is all there is.
    if (check == FirstBytes::wait && client_.read_eof) {
      check = host_check_ ? judge_host(host_check_->finish(inbox_)) : FirstBytes::pass;
    }
    if (check == FirstBytes::wait) {
      const Tunnel::Step step = tunnel_.start();
      if (step == Tunnel::Step::over) return after(step);
      return forward_undecided_bytes();
    }
    if (check != FirstBytes::pass) return act_on(check, false);  // closes before anything went up
    sni_.reset();
    host_check_.reset();
  }
  const Tunnel::Step step = tunnel_.start(inbox_);
  std::string().swap(inbox_);
  return after(step);
}

// Feeds the readers the client's newest bytes (`fresh`, already appended to inbox_) and says what
// they answer together. TLS is asked first: its first byte (22) is never an HTTP request's.
ClientConnection::FirstBytes ClientConnection::check_first_bytes(std::string_view fresh) {
  if (sni_) {
    const SniReader::Verdict verdict = sni_->feed(fresh);
    if (verdict != SniReader::Verdict::not_tls) {
      // A TLS record has begun: the Host reader has nothing to read in it.
      if (sni_->taken() > 0) host_check_.reset();
      return judge_sni(verdict);
    }
    sni_.reset();
  }
  if (host_check_) return judge_host(host_check_->feed(inbox_));
  return FirstBytes::pass;
}

ClientConnection::FirstBytes ClientConnection::judge_sni(SniReader::Verdict verdict) const {
  switch (verdict) {
    case SniReader::Verdict::need_more:
      return FirstBytes::wait;
    case SniReader::Verdict::not_tls:
    case SniReader::Verdict::no_sni:
      return FirstBytes::pass;  // no name to compare (SPEC §16: "or none")
    case SniReader::Verdict::sni:
      return sni_names_host(sni_->name(), target_.host) ? FirstBytes::pass : FirstBytes::sni_mismatch;
    case SniReader::Verdict::unreadable:
      return FirstBytes::sni_mismatch;  // fail closed: a server might read a name we could not
  }
  return FirstBytes::sni_mismatch;
}

ClientConnection::FirstBytes ClientConnection::judge_host(TunnelHostReader::Verdict verdict) noexcept {
  switch (verdict) {
    case TunnelHostReader::Verdict::need_more:
      return FirstBytes::wait;
    case TunnelHostReader::Verdict::not_http:
    case TunnelHostReader::Verdict::names_host:
      return FirstBytes::pass;
    case TunnelHostReader::Verdict::other_host:
      return FirstBytes::host_mismatch;  // includes fail closed: HTTP we could not read strictly
  }
  return FirstBytes::host_mismatch;
}

// The most the client's held bytes may reach while the readers still waiting read on: each
// answers by its own bound (kMaxSniHoldBytes, --max-head-bytes), so there is room while they wait.
std::size_t ClientConnection::held_bound() const noexcept {
  std::size_t bound = 0;
  if (sni_) bound = kMaxSniHoldBytes;
  if (host_check_) bound = std::max(bound, server_.config().max_head_bytes);
  return bound;
}

// The client's read event while the checks wait: its bytes are read here, not by the tunnel.
ClientConnection::Next ClientConnection::first_bytes_readable() {
  const std::size_t bound = held_bound();
  const std::size_t room = bound > inbox_.size() ? bound - inbox_.size() : 0;
  if (room == 0) return close_mismatch(sni_ ? Reason::sni_mismatch : Reason::host_mismatch);
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd.get(), buffer, std::min(room, sizeof buffer), 0);
  if (n == -1) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Next::keep;
    tunnel_.end_by(TunnelEnd::error);
    return Next::close;
  }
  if (n == 0) {
    // The client half-closed. An unfinished ClientHello names nothing a server could act on; an
    // unfinished request head might be acted on at the end of the stream by a lenient server.
    if (host_check_) return act_on(judge_host(host_check_->finish(inbox_)), true);
    return release_held_bytes(true);
  }
  const std::string_view bytes(buffer, static_cast<std::size_t>(n));
  inbox_.append(bytes);
  return act_on(check_first_bytes(bytes), false);
}

// Acts on the checks' answer; `client_sent_fin`: the client's read just ended (after the bytes).
ClientConnection::Next ClientConnection::act_on(FirstBytes check, bool client_sent_fin) {
  switch (check) {
    case FirstBytes::wait:
      return forward_undecided_bytes();
    case FirstBytes::pass:
      return release_held_bytes(client_sent_fin);
    case FirstBytes::sni_mismatch:
      return close_mismatch(Reason::sni_mismatch);
    case FirstBytes::host_mismatch:
      return close_mismatch(Reason::host_mismatch);
  }
  return Next::close;
}

// The checks let the bytes through (or the client sent FIN first): they go upstream, and from now
// on the tunnel reads the client.
ClientConnection::Next ClientConnection::release_held_bytes(bool client_sent_fin) {
  const std::size_t sent = host_check_ ? host_check_->forwarded() : 0;  // went up while it waited
  sni_.reset();
  host_check_.reset();
  std::string held;
  held.swap(inbox_);
  if (tunnel_.client_sent(std::string_view(held).substr(sent)) == Tunnel::Step::over) return Next::close;
  // A socket at EOF reads 0 again: the tunnel reads the FIN itself and passes it on after them.
  if (client_sent_fin) return after(tunnel_.readable(client_));
  return Next::keep;
}

// While the Host reader waits, the first line so far goes upstream (TunnelHostReader::
// take_forwardable says which bytes, and why they cannot reach a site): a client that sends a
// short message with no line end and waits for its answer (an echo's `ping`) is answered, as
// without a host list. Nothing goes up while the SNI reader still waits: a ClientHello is held whole.
ClientConnection::Next ClientConnection::forward_undecided_bytes() {
  if (sni_ || !host_check_) return Next::keep;
  if (tunnel_.client_sent(host_check_->take_forwardable(inbox_)) == Tunnel::Step::over) return Next::close;
  return Next::keep;
}

// Closes the tunnel before any held byte a server could act on went upstream. Its `sni mismatch` or `host mismatch` line
// takes the place of the done line (the tunnel carried nothing of the client's) and is counted as
// a refusal. No reply: the tunnel's own went out before the client's first byte.
ClientConnection::Next ClientConnection::close_mismatch(Reason reason) {
  sni_.reset();
  host_check_.reset();
  std::string().swap(inbox_);
  done_owed_ = false;
  server_.count_refusal(reason);
  server_.log().decision({id_, kind_, target_.host, target_.port, ip_text_, reason});
  return Next::close;
}

}  // namespace boxproxy
