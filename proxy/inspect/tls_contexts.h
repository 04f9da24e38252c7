// SPDX-License-Identifier: Apache-2.0
// The two TLS contexts of request inspection (SPEC §18), made once per process and shared by
// every inspected connection: the box-facing one (the proxy as a TLS server, presenting a leaf of
// the session's CA) and the origin-facing one (the proxy as a TLS client, verifying the origin).
//
// Both: TLS 1.2 and up, TLS 1.3's AES-128-GCM-SHA256 suite first (tls_contexts.cc says why), ALPN
// "h2" or "http/1.1" each way
// (SPEC §19), no renegotiation, buffers released while idle (SSL_MODE_RELEASE_BUFFERS: an idle
// connection holds no record buffers). A connection's own settings (its leaf, the name it checks)
// are made on its SSL object (proxy/inspect/inspected_client_side.cc, inspected_origin_side.cc),
// never on the shared context.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/inspect/openssl_owners.h"

namespace boxproxy {

// The protocol both sides name in ALPN, in its wire form (a length byte, then the name).
inline constexpr std::string_view kAlpnHttp11{"\x08http/1.1", 9};
// What the box-facing side offers (SPEC §19): h2 first, so a box that offers both speaks HTTP/2
// (proxy/inspect/h2_front.h).
inline constexpr std::string_view kAlpnBoxFacing{"\x02h2\x08http/1.1", 12};
inline constexpr std::string_view kAlpnH2{"h2", 2};
// What the origin-facing side offers (SPEC §19, stage 2): h2 first; an origin that picks it is
// spoken to through an H2Back (proxy/inspect/h2_back.h).
inline constexpr std::string_view kAlpnOrigin{"\x02h2\x08http/1.1", 12};

// What a box-facing connection's ClientHello is checked against (SPEC §18: an SNI that names
// another host is `sni mismatch`). The connection owns it; the context's callback reads it.
struct ServerNameCheck {
  std::string host;         // the decided host
  bool mismatched = false;  // set by the callback when the ClientHello named another host
};

// The box-facing context: a TLS server, with the callbacks that check each ClientHello's server
// name against the connection's ServerNameCheck (attach_server_name_check), on every handshake,
// resumed or not, and select "h2" or "http/1.1" by ALPN (or nothing, when the client offers
// neither). The box may resume its sessions: stateless tickets (TLS 1.3 and 1.2), one a
// handshake, valid two hours, under keys OpenSSL draws for the context (in memory only, gone with
// the process); no server-side cache and no early data. A session is resumed only on a connection
// decided for the same host and port (bind_sessions_to_origin). Throws std::runtime_error when
// OpenSSL cannot make it (a start-up failure).
[[nodiscard]] SslCtxPtr make_client_facing_context();

// The origin-facing context: a TLS client that trusts `store` (the system's CAs, or
// --upstream-ca's) and verifies the peer (SSL_VERIFY_PEER); the host name is checked per
// connection. Takes `store`. Throws std::runtime_error when OpenSSL cannot make it.
[[nodiscard]] SslCtxPtr make_origin_context(X509StorePtr store);

// Binds the sessions `ssl` (of the box-facing context) resumes or issues to the connection's
// decided host and port: its session id context is a SHA-256 of them (the host without regard to
// case or one trailing dot), which OpenSSL keeps inside each ticket it issues and compares before
// it resumes one. A ticket issued on a connection decided for another host or port then makes a
// full handshake, with that connection's own leaf. What it stops: a box replaying a session made
// on an allowed host's connection on another host's, to skip the leaf that other host's
// connection would show, or to blur which host a session authenticates. Call it before the
// handshake; false when OpenSSL cannot (the connection is dropped).
[[nodiscard]] bool bind_sessions_to_origin(SSL* ssl, std::string_view host, std::uint16_t port) noexcept;

// Makes `ssl` (of the box-facing context) check its ClientHello's server name against `check`,
// which must outlive the handshake. False when OpenSSL cannot (the connection is dropped).
[[nodiscard]] bool attach_server_name_check(SSL* ssl, ServerNameCheck* check) noexcept;

// Whether a ClientHello's server name names `host`: compared without regard to case, one
// trailing dot ignored on either side.
[[nodiscard]] bool server_name_matches(std::string_view server_name, std::string_view host) noexcept;

}  // namespace boxproxy
