// ClientConnection, part 6: a resolve-only request (SPEC §16), Tor's SOCKS5 RESOLVE (0xF0). The
// name goes through the same decision as a CONNECT (SPEC §5 steps 1 to 4: host list, lookup,
// address rule); an allowed one is answered with a checked address in BND.ADDR and is never
// dialled, so it takes no tunnel slot and spends none of the connection budget. Its lookup does
// spend one of --max-lookups (SPEC §14), and its answer is kept for its TTL, so the connection
// the box then makes to the name costs none. A refused one gets the SOCKS5 refusal of its class
// (SPEC §6). The in-box bridge's DNS responder asks this way, so the box learns an address only
// for a name the proxy would let it reach, and a name off the list never leaves the machine (no
// lookup is made for it). Under --ask a name off the list is neither asked about nor refused here
// but answered "by name" (resolve_by_name), with no lookup: the connection that follows is asked
// about, once, about its own port.
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
  server_.log().decision({id_, kind_, target_.host, target_.port, ip_text_, std::nullopt, asked_text()});
  // VER REP RSV ATYP BND.ADDR BND.PORT (0).
  std::string reply{'\x05', '\x00', '\x00', chosen->is_v4() ? '\x01' : '\x04'};
  reply.append(reinterpret_cast<const char*>(chosen->bytes.data()), chosen->size());
  reply.append(2, '\0');
  return answer_resolve(reply);
}

// A name the host list does not cover, under --ask (SPEC §15, §16). Not asked about here: a
// RESOLVE has no port, so an ask would be about one (443) the box may never use, and `always`
// would open it; the connection that follows would then be asked again about its own port, and
// the box's DNS would wait on a person (the bridge gives up on a question long before
// --ask-timeout). Nor refused, nor looked up (a name nobody approved never leaves the machine).
// It is answered "by name": success, with the name itself as the bound address (ATYP 3), so no
// address, real or not, is given. The bridge's DNS responder answers it with its stand-in address,
// and the box's connection to that comes back to the proxy by that name with its real port, and
// is asked about once, within --ask-timeout; a `deny` refuses that connection. With nobody to ask
// (no control client open) the name is not-listed at once, as a CONNECT to it would be, and the
// box's DNS says NXDOMAIN: a stand-in would only lead to a refusal.
ClientConnection::Next ClientConnection::resolve_by_name() {
  if (!server_.asks()->can_ask()) return follow(decision_.asked(false, target_));
  undecided_.release();
  // Nothing is decided: port 0 (none was judged), no address, and asked=deferred, so no reader
  // takes the line for an approval.
  server_.log().decision({id_, kind_, target_.host, 0, "-", std::nullopt, "deferred"});
  // VER REP RSV ATYP=3 LEN NAME BND.PORT (0). A parsed name is at most 253 bytes.
  std::string reply{'\x05', '\x00', '\x00', '\x03', static_cast<char>(target_.host.size())};
  reply.append(target_.host);
  reply.append(2, '\0');
  return answer_resolve(reply);
}

// Writes a RESOLVE's answer; the connection closes once it is written (side_writable).
ClientConnection::Next ClientConnection::answer_resolve(std::string_view reply) {
  phase_ = Phase::replying;
  arm_timer(server_.config().head_timeout);
  if (queue(client_, reply) == Next::close) return Next::close;
  return client_.has_queued() ? Next::keep : Next::close;
}

}  // namespace boxproxy
