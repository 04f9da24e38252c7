// SPDX-License-Identifier: Apache-2.0
// The SNI check's reader (SPEC §16): what a tunnel's first client bytes say about the host the
// client asks its TLS server for. Pure: fed the bytes as they arrive, in any pieces, it answers
// need more, not TLS, TLS without SNI, the SNI's name, or unreadable.
//
// Why it exists: with a host list in force, a box that may reach `allowed.example` could otherwise
// open a tunnel to that name's address and ask the server there (a CDN, a shared host) for any
// other site in the ClientHello's server_name. The proxy never decrypts anything; it only reads
// the one plaintext message every TLS connection starts with.
//
// What it reads (RFC 8446 §5.1, §4.1.2; RFC 6066 §3): TLS records of type handshake (22), each
// with a 5-byte header, whose payloads are joined into the first handshake message; that message
// must be a ClientHello (type 1), read whole, with at most one server_name extension holding
// exactly one host_name. A ClientHello may be split over several records and over any number of
// reads; both are joined here.
//
// Fail closed: once the first byte says "TLS handshake", anything this reader cannot follow to
// its end (a bad record, a message that is not a ClientHello, a ClientHello longer than its bound,
// two server_name extensions, a malformed list) is `unreadable`, and the caller closes the tunnel:
// a TLS server that reads the message differently from us could otherwise be shown another name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace boxproxy {

// The most a ClientHello message (its 4-byte handshake header included) may take: 16 KiB, one
// full TLS record's plaintext (2^14, RFC 8446 §5.1). A real ClientHello is about 0.5 KiB, and
// under 2 KiB with a post-quantum key share (X25519MLKEM768's 1184 bytes) and a padding
// extension; 16 KiB is eight times that. Past it the message is `unreadable`, never let through
// unread (an SNI hidden behind 16 KiB of padding would otherwise pass).
inline constexpr std::size_t kMaxClientHelloBytes = 16 * 1024;

// The most raw bytes (record headers included) the reader takes before it must have answered:
// the ClientHello's bound plus one 5-byte record header per 256 bytes of it, which is more
// records than any client splits a ClientHello into (one record, at times two). The caller holds
// the same bytes until the answer, so this also bounds what a tunnel holds for the check.
inline constexpr std::size_t kMaxSniHoldBytes = kMaxClientHelloBytes + (kMaxClientHelloBytes / 256) * 5;

class SniReader {
 public:
  enum class Verdict : std::uint8_t {
    need_more,   // no answer yet: feed the next bytes
    not_tls,     // the first byte is not a TLS handshake record's: not TLS, let it through
    no_sni,      // a whole, well-formed ClientHello without a server_name extension
    sni,         // a whole, well-formed ClientHello naming name()
    unreadable,  // looks like TLS but cannot be read to its end within the bounds: close
  };

  // Takes the next bytes of the client's stream (any split) and answers. Once the answer is not
  // need_more it never changes, and further bytes are ignored (not even looked at).
  Verdict feed(std::string_view bytes);

  [[nodiscard]] Verdict verdict() const noexcept { return verdict_; }
  // The server_name's host_name exactly as sent (any bytes, 1 to 65535 of them); meaningful after
  // Verdict::sni.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // Raw bytes taken so far (at most kMaxSniHoldBytes while need_more).
  [[nodiscard]] std::size_t taken() const noexcept { return taken_; }

 private:
  Verdict answer(Verdict verdict) noexcept;
  Verdict read_client_hello();

  Verdict verdict_ = Verdict::need_more;
  std::size_t taken_ = 0;
  // The record being read: its header as far as received, then how much payload is left.
  unsigned char header_[5] = {};
  std::size_t header_have_ = 0;
  std::size_t record_left_ = 0;
  // The handshake message joined from the records' payloads (at most kMaxClientHelloBytes).
  std::string message_;
  std::string name_;
};

// The server_name extension's body (RFC 6066 §3), a ServerNameList of exactly one non-empty
// host_name: true with `name` the name's bytes (a view into `body`); false for anything else.
// Also what the inspector checks a box's ClientHello with (proxy/inspect/tls_contexts.cc).
[[nodiscard]] bool read_server_name_extension(std::string_view body, std::string_view& name) noexcept;

// True when an SNI host_name names `host` (a target's host, its trailing dot already dropped):
// compared without regard to ASCII case, one trailing dot of the SNI ignored. Bytes outside ASCII
// letters are compared exactly, so an odd byte never matches by accident.
[[nodiscard]] bool sni_names_host(std::string_view sni, std::string_view host) noexcept;

}  // namespace boxproxy
