// ClientConnection, part 6: a resolve-only request (SPEC §16), Tor's SOCKS5 RESOLVE (0xF0). The
// name goes through the same decision as a CONNECT (SPEC §5 steps 1 to 4: host list, lookup,
// address rule); an allowed one is answered with a checked address in BND.ADDR and is never
// dialled, so it takes no tunnel slot and spends none of the connection budget. Its lookup does
// spend one of --max-lookups (SPEC §14), and its answer is kept for its TTL, so the connection
// the box then makes to the name costs none. A refused one gets the SOCKS5 refusal of its class
// (SPEC §6). The in-box bridge's DNS responder asks this way, so the box learns an address only
// for a name the proxy would let it reach, and a name off the list never leaves the machine (no
// lookup is made for it).
#include "proxy/client_connection.h"
#include "proxy/proxy_server.h"

namespace boxproxy {

// RESOLVE carries no meaningful port: the handshake judges it at 443. A name the host list opens
// only on other ports (`api.example:8443`) is resolved too, at the first such port, since the
// box's next connection may well be to it; the address rule does not depend on the port.
void ClientConnection::widen_resolve_port() {
  const auto& list = server_.config().policy.allow;
  if (!list || !target_.is_name()) return;
  if (list->match(target_.host, target_.port) != HostList::Match::port_not_open) return;
  if (list->match(target_.host, 80) == HostList::Match::listed) {
    target_.port = 80;
    return;
  }
  for (const HostEntry& entry : list->entries()) {
    if (entry.port && list->match(target_.host, *entry.port) == HostList::Match::listed) {
      target_.port = *entry.port;
      return;
    }
  }
}

// Allowed: the answer, then close. The first checked IPv4 answer, else the first answer (an
// IPv6-only name): RESOLVE returns one address, and a box's clients ask for IPv4 first.
ClientConnection::Next ClientConnection::resolved() {
  const std::span<const IpAddress> answers = decision_.answers();
  if (answers.empty()) return refuse(Reason::name_not_resolved);
  const IpAddress* chosen = &answers.front();
  for (const IpAddress& answer : answers) {
    if (answer.is_v4()) {
      chosen = &answer;
      break;
    }
  }
  ip_text_ = chosen->to_string();
  undecided_.release();
  server_.log().decision({id_, kind_, target_.host, target_.port, ip_text_, std::nullopt});
  // VER REP RSV ATYP BND.ADDR BND.PORT (0).
  std::string reply{'\x05', '\x00', '\x00', chosen->is_v4() ? '\x01' : '\x04'};
  reply.append(reinterpret_cast<const char*>(chosen->bytes.data()), chosen->size());
  reply.append(2, '\0');
  phase_ = Phase::replying;  // closed once the answer is written (side_writable)
  arm_timer(server_.config().head_timeout);
  if (queue(client_, reply) == Next::close) return Next::close;
  return client_.has_queued() ? Next::keep : Next::close;
}

}  // namespace boxproxy
