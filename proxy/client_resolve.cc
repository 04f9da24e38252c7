// SPDX-License-Identifier: Apache-2.0
// A RESOLVE (SPEC §16), Tor's SOCKS5 0xF0: the name goes through the same decision as a CONNECT
// (steps 1 to 4); an allowed one is answered with a checked address and is never dialled, so it
// takes no tunnel slot and spends none of the connection budget. Its lookup spends one of
// --max-lookups (SPEC §14), and its answer is kept for its TTL, so the connection the box then
// makes to the name costs none. The in-box bridge's DNS responder asks this way, so the box learns
// an address only for a name the proxy would let it reach, and a name off the list never leaves
// the machine.
#include "proxy/client_connection.h"

#include "proxy/proxy_server.h"
#include "proxy/wire/replies.h"
#include "proxy/wire/resolve_request.h"

namespace boxproxy {

ClientConnection::Next ClientConnection::resolved() {
  const IpAddress* chosen = resolve_answer(decision_.answers());
  if (chosen == nullptr) return refuse(Reason::name_not_resolved);
  const std::string address = chosen->to_string();
  undecided_.release();
  const Target& target = request_.target;
  server_.log().decision(
      {id_, request_.kind, target.host, request_.logged_port, address, std::nullopt, asked_text()});
  return answer_and_close(socks5_resolved_reply(*chosen));
}

// A name the host list does not cover, under --ask (SPEC §15, §16): answered "by name", neither
// asked about (a RESOLVE has no port; the box's connection that follows is asked, once, about its
// own), nor refused, nor looked up (a name nobody approved never leaves the machine). The bridge's
// DNS responder answers it with its stand-in address. With nobody to ask (no control client open)
// it is not-listed at once, as a CONNECT to it would be: a stand-in would only lead to a refusal.
ClientConnection::Next ClientConnection::resolve_by_name() {
  if (!server_.name_asks()->can_ask()) return follow(decision_.asked(false, request_.target));
  undecided_.release();
  // Nothing is decided: the port asked with (none was judged), no address, and asked=deferred, so
  // no reader takes the line for an approval.
  server_.log().decision(
      {id_, request_.kind, request_.target.host, request_.logged_port, "-", std::nullopt, "deferred"});
  return answer_and_close(socks5_resolved_by_name_reply(request_.target.host));
}

// Writes a final answer; the connection closes once it is written (client_writable).
ClientConnection::Next ClientConnection::answer_and_close(std::string_view reply) {
  phase_ = Phase::replying;
  timer_.arm(server_.config().head_timeout);
  if (!send_or_queue(client_, reply)) return Next::close;
  return client_.has_queued() ? Next::keep : Next::close;
}

}  // namespace boxproxy
