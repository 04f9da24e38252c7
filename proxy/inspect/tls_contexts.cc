// SPDX-License-Identifier: Apache-2.0
// The two TLS contexts of request inspection (proxy/inspect/tls_contexts.h).
#include "proxy/inspect/tls_contexts.h"

#include <openssl/err.h>
#include <openssl/tls1.h>

#include <stdexcept>

#include "proxy/inspect/origin_sessions.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// Options both contexts take. No renegotiation: a client-started one is a way to make the proxy
// do handshakes without end on one connection, and nothing needs it.
constexpr std::uint64_t kCommonOptions = SSL_OP_NO_RENEGOTIATION;
// The box-facing side also reads an EOF without close_notify as an end, not an OpenSSL error that
// hides which side closed. Not the origin side: OpenSSL takes such an EOF "as if close_notify was
// received", and whether it was is what tells a whole body read to the origin's close from one cut
// short on the way (the connection passes the second on so that the box cannot take it for whole;
// without close_notify it is an error event there).
constexpr std::uint64_t kBoxFacingOptions = kCommonOptions | SSL_OP_IGNORE_UNEXPECTED_EOF;

// The index of the ServerNameCheck in an SSL's ex_data, made once; -1 when OpenSSL could not.
int server_name_check_index() noexcept {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// The ClientHello's server name against the connection's host (SPEC §18). What it stops: a box
// that reached an inspected endpoint's address asking, by SNI, for another site; the leaf it
// would be shown names the decided host only, but a client that ignores the certificate would
// still be talking to a proxy that judges its requests for a host it does not mean. A hello with
// no server name is accepted ("or none", as §16's check).
int check_server_name(SSL* ssl, int* alert, void*) {
  const int index = server_name_check_index();
  auto* check = index < 0 ? nullptr : static_cast<ServerNameCheck*>(SSL_get_ex_data(ssl, index));
  if (check == nullptr) {
    *alert = SSL_AD_INTERNAL_ERROR;  // a connection set up without its check is never served
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr || server_name_matches(name, check->host)) return SSL_TLSEXT_ERR_OK;
  check->mismatched = true;
  *alert = SSL_AD_UNRECOGNIZED_NAME;
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// "h2" when the client offers it, else "http/1.1" when it offers that; else no ALPN at all (the
// client then decides whether to go on; a client that speaks HTTP/2 without having agreed to it
// by ALPN is refused by the HTTP/1.1 head parser as bad request).
int select_protocol(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* offered,
                  unsigned int offered_length, void*) {
  unsigned char* chosen = nullptr;
  unsigned char chosen_length = 0;
  const auto* ours = reinterpret_cast<const unsigned char*>(kAlpnBoxFacing.data());
  if (SSL_select_next_proto(&chosen, &chosen_length, ours, static_cast<unsigned int>(kAlpnBoxFacing.size()), offered,
                            offered_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  *out_length = chosen_length;
  return SSL_TLSEXT_ERR_OK;
}

[[noreturn]] void fail(std::string_view what) { throw std::runtime_error(openssl_failure(what)); }

// TLS 1.3's suites, AES-128-GCM with SHA-256 first (OpenSSL's own order puts AES-256-GCM with
// SHA-384 first). Every one of them is a suite TLS 1.3 defines, all of them AEADs; what the order
// changes is the hash of the key schedule: a handshake runs a few dozen HMACs, and SHA-256 has
// the processor's SHA instructions where SHA-384 runs in software (sha512_block_data_order was 5%
// of the inspector's CPU for a new connection, both sides a full handshake, in bench/inspect).
// AES-128-GCM is TLS 1.3's mandatory suite (RFC 8446 §9.1): no weaker a choice than a peer
// would make. The box side picks by this order (server preference), the origin side offers it.
constexpr const char* kTls13Suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

}  // namespace

bool server_name_matches(std::string_view server_name, std::string_view host) noexcept {
  if (server_name.ends_with('.')) server_name.remove_suffix(1);
  if (host.ends_with('.')) host.remove_suffix(1);
  return !server_name.empty() && iequals(server_name, host);
}

SslCtxPtr make_client_facing_context() {
  SslCtxPtr context(SSL_CTX_new(TLS_server_method()));
  if (!context) fail("cannot make the box-facing TLS context");
  SSL_CTX* ctx = context.get();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) fail("cannot set its lowest TLS version");
  SSL_CTX_set_options(ctx, kBoxFacingOptions | SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1) fail("cannot set its TLS 1.3 suites");
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_num_tickets(ctx, 0) != 1) fail("cannot turn TLS 1.3 tickets off");
  if (server_name_check_index() < 0) fail("cannot reserve the server name check's slot");
  if (SSL_CTX_set_tlsext_servername_callback(ctx, &check_server_name) != 1) fail("cannot set the SNI check");
  SSL_CTX_set_alpn_select_cb(ctx, &select_protocol, nullptr);
  return context;
}

SslCtxPtr make_origin_context(X509StorePtr store) {
  SslCtxPtr context(SSL_CTX_new(TLS_client_method()));
  if (!context) fail("cannot make the origin-facing TLS context");
  SSL_CTX* ctx = context.get();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) fail("cannot set its lowest TLS version");
  SSL_CTX_set_options(ctx, kCommonOptions);
  if (SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1) fail("cannot set its TLS 1.3 suites");
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_cert_store(ctx, store.release());  // the context owns it from here
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!keep_origin_sessions(ctx)) fail("cannot reserve the origin sessions' slot");
  // 0 is success here (OpenSSL's one inverted return).
  if (SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(kAlpnOrigin.data()),
                              static_cast<unsigned int>(kAlpnOrigin.size())) != 0) {
    fail("cannot set its ALPN");
  }
  return context;
}

bool attach_server_name_check(SSL* ssl, ServerNameCheck* check) noexcept {
  const int index = server_name_check_index();
  return index >= 0 && SSL_set_ex_data(ssl, index, check) == 1;
}

}  // namespace boxproxy
