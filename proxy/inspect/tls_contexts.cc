// SPDX-License-Identifier: Apache-2.0
// The two TLS contexts of request inspection (proxy/inspect/tls_contexts.h).
#include "proxy/inspect/tls_contexts.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/tls1.h>

#include <array>
#include <stdexcept>
#include <string>

#include "proxy/inspect/origin_sessions.h"
#include "proxy/wire/sni.h"
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
//
// Read from the hello's own extension, in the hello callback, before OpenSSL looks at any session
// the hello offers: SSL_get_servername (what the server name callback would read) answers, on a
// TLS 1.2 resumption, the name of the handshake that made the session and not the one this hello
// sends, so a box offering a session of the decided host's could name any host and pass.
// A server_name OpenSSL would refuse as malformed is refused here too (a decode error, not a
// mismatch): fail closed, as proxy/wire/sni.h's reader.
int check_client_hello(SSL* ssl, int* alert, void*) {
  const int index = server_name_check_index();
  auto* check = index < 0 ? nullptr : static_cast<ServerNameCheck*>(SSL_get_ex_data(ssl, index));
  if (check == nullptr) {
    *alert = SSL_AD_INTERNAL_ERROR;  // a connection set up without its check is never served
    return SSL_CLIENT_HELLO_ERROR;
  }
  const unsigned char* body = nullptr;
  std::size_t length = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &body, &length) != 1) return SSL_CLIENT_HELLO_SUCCESS;
  std::string_view name;
  if (!read_server_name_extension({reinterpret_cast<const char*>(body), length}, name)) {
    *alert = SSL_AD_DECODE_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  if (server_name_matches(name, check->host)) return SSL_CLIENT_HELLO_SUCCESS;
  check->mismatched = true;
  *alert = SSL_AD_UNRECOGNIZED_NAME;
  return SSL_CLIENT_HELLO_ERROR;
}

// The name was checked by check_client_hello; this only says it was used, so OpenSSL acknowledges
// it in its answer (RFC 6066 §3) as it did when the check was made here.
int acknowledge_server_name(SSL*, int*, void*) { return SSL_TLSEXT_ERR_OK; }

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

// How long a session the box may resume lasts (the ticket's lifetime, SSL_CTX_set_timeout): two
// hours, well inside the leaf's validity (7 days on from when it is made, SPEC §18), so a resumed
// session never stands for a leaf that has expired; long enough that a client polling an API
// resumes, short enough that a stolen ticket is soon worthless.
constexpr long kBoxSessionSeconds = 2 * 60 * 60;

// The box-facing side's sessions: stateless tickets (TLS 1.3 and 1.2), no server-side cache, so
// the inspector's memory does not grow with the connections it has served. The ticket keys are
// the ones OpenSSL draws at random for the context: in this process's memory only, never written,
// gone when it ends. One ticket a handshake (OpenSSL's default is two): a client resumes with the
// newest, and each ticket costs an encryption and a record. No 0-RTT (max early data 0, OpenSSL's
// default, set so that it stays so): early data is sent before the handshake ends and can be
// replayed by whoever saw it, and refusing a replay would take a server-side record of every
// ticket used; the inspector reads a box's requests only once the handshake is complete.
void offer_resumption(SSL_CTX* ctx) {
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_timeout(ctx, kBoxSessionSeconds);
  if (SSL_CTX_set_num_tickets(ctx, 1) != 1) fail("cannot set how many tickets it issues");
  if (SSL_CTX_set_max_early_data(ctx, 0) != 1) fail("cannot turn early data off");
}

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
  SSL_CTX_set_options(ctx, kBoxFacingOptions | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_ciphersuites(ctx, kTls13Suites) != 1) fail("cannot set its TLS 1.3 suites");
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  offer_resumption(ctx);
  if (server_name_check_index() < 0) fail("cannot reserve the server name check's slot");
  SSL_CTX_set_client_hello_cb(ctx, &check_client_hello, nullptr);
  if (SSL_CTX_set_tlsext_servername_callback(ctx, &acknowledge_server_name) != 1) fail("cannot set the SNI answer");
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

bool bind_sessions_to_origin(SSL* ssl, std::string_view host, std::uint16_t port) noexcept {
  try {
    if (host.ends_with('.')) host.remove_suffix(1);
    // A label first, so that no other use of a digest of the same bytes could ever be the same.
    const std::string origin = "boxproxy box session\n" + ascii_lower(host) + "\n" + std::to_string(port);
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(origin.data(), origin.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
        length > SSL_MAX_SID_CTX_LENGTH) {
      return false;
    }
    return SSL_set_session_id_context(ssl, digest.data(), length) == 1;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

bool attach_server_name_check(SSL* ssl, ServerNameCheck* check) noexcept {
  const int index = server_name_check_index();
  return index >= 0 && SSL_set_ex_data(ssl, index, check) == 1;
}

}  // namespace boxproxy
