// ClientConnection, part 5: the SNI check (SPEC §16). With a host list in force, a tunnel to a
// name starts with the client's bytes held: proxy/sni.h reads them until it knows whether they
// are a TLS ClientHello and what its server_name says. A ClientHello naming another host than the
// one decided (or one that cannot be read within its bound) closes the tunnel as `sni mismatch`
// before any of its bytes went upstream; anything else is handed to the tunnel and relayed.
//
// What it stops: a box allowed `good.example` dialling that name's address (a CDN, a shared host)
// and asking the server there, in the ClientHello, for a site the list does not hold.
//
// While the check waits, the tunnel already runs the other way: a server that speaks first (SMTP,
// SSH on a listed port) is heard, and the client, which answers it, is then read. The idle timer
// is the tunnel's: held bytes are not activity, so a client that never completes its ClientHello
// is closed like a silent one, and it never holds more than kMaxSniHoldBytes.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "proxy/client_connection.h"
#include "proxy/proxy_server.h"

namespace boxproxy {

bool ClientConnection::sni_check_applies() const noexcept {
  const ProxyConfig& config = server_.config();
  // Only a name has something to compare with an SNI. With a host list every allowed target is a
  // name (an IP literal is not-listed), so an address is never checked; without a list nothing
  // narrows the box's names, and any SNI is as good as the name it could ask for directly.
  return config.sni_check && config.policy.allow.has_value() && target_.is_name();
}

// The tunnel starts here once its reply is queued: `inbox_` holds the client's early bytes.
ClientConnection::Next ClientConnection::start_tunnel() {
  if (sni_check_applies()) {
    sni_.reset(new (std::nothrow) SniReader);
    if (!sni_) return Next::close;
    const SniCheck check = judge_sni(sni_->feed(inbox_));
    if (check == SniCheck::close) return close_sni_mismatch();
    // A client that already half-closed sends nothing more: what it sent is all there is, and an
    // unfinished ClientHello names nothing a server could act on.
    if (check == SniCheck::wait && !client_.read_eof) return after(tunnel_.start());
    sni_.reset();
  }
  const Tunnel::Step step = tunnel_.start(inbox_);
  std::string().swap(inbox_);
  return after(step);
}

ClientConnection::SniCheck ClientConnection::judge_sni(SniReader::Verdict verdict) const {
  switch (verdict) {
    case SniReader::Verdict::need_more:
      return SniCheck::wait;
    case SniReader::Verdict::not_tls:
    case SniReader::Verdict::no_sni:
      return SniCheck::pass;  // no name to compare (SPEC §16: "or none")
    case SniReader::Verdict::sni:
      return sni_names_host(sni_->name(), target_.host) ? SniCheck::pass : SniCheck::close;
    case SniReader::Verdict::unreadable:
      return SniCheck::close;  // fail closed: a server might read a name we could not
  }
  return SniCheck::close;
}

// The client's read event while the check waits: its bytes are read here, not by the tunnel.
ClientConnection::Next ClientConnection::sni_readable() {
  // The reader answers once it has taken kMaxSniHoldBytes, so there is room while it waits.
  const std::size_t room = kMaxSniHoldBytes > sni_->taken() ? kMaxSniHoldBytes - sni_->taken() : 0;
  if (room == 0) return close_sni_mismatch();
  char buffer[kReadChunk];
  const ssize_t n = ::recv(client_.fd.get(), buffer, std::min(room, sizeof buffer), 0);
  if (n == -1) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Next::keep;
    tunnel_.end_by(TunnelEnd::error);
    return Next::close;
  }
  if (n == 0) return release_held_bytes(true);
  const std::string_view bytes(buffer, static_cast<std::size_t>(n));
  inbox_.append(bytes);
  switch (judge_sni(sni_->feed(bytes))) {
    case SniCheck::wait:
      return Next::keep;
    case SniCheck::pass:
      return release_held_bytes(false);
    case SniCheck::close:
      return close_sni_mismatch();
  }
  return Next::close;
}

// The check let the bytes through (or the client sent FIN first): they go upstream, and from now
// on the tunnel reads the client.
ClientConnection::Next ClientConnection::release_held_bytes(bool client_sent_fin) {
  sni_.reset();
  std::string held;
  held.swap(inbox_);
  if (tunnel_.client_sent(held) == Tunnel::Step::over) return Next::close;
  // A socket at EOF reads 0 again: the tunnel reads the FIN itself and passes it on after them.
  if (client_sent_fin) return after(tunnel_.readable(client_));
  return Next::keep;
}

// Closes the tunnel before any held byte went upstream. Its `sni mismatch` line takes the place
// of the done line (the tunnel carried nothing of the client's) and is counted as a refusal.
ClientConnection::Next ClientConnection::close_sni_mismatch() {
  sni_.reset();
  std::string().swap(inbox_);
  done_owed_ = false;
  server_.count_refusal(Reason::sni_mismatch);
  server_.log().decision({id_, kind_, target_.host, target_.port, ip_text_, Reason::sni_mismatch});
  return Next::close;
}

}  // namespace boxproxy
