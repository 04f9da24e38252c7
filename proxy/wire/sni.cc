// SPDX-License-Identifier: Apache-2.0
#include "proxy/wire/sni.h"

#include <algorithm>

#include "table/ascii.h"

namespace boxproxy {
namespace {

constexpr unsigned char kHandshakeRecord = 22;   // ContentType handshake (RFC 8446 §5.1)
constexpr unsigned char kClientHello = 1;        // HandshakeType client_hello (§4)
constexpr std::size_t kRecordHeaderBytes = 5;    // type, legacy_record_version, length
constexpr std::size_t kMaxRecordPayload = 1u << 14;  // TLSPlaintext.length: "MUST NOT exceed 2^14"
constexpr std::size_t kHandshakeHeaderBytes = 4;  // msg_type, uint24 length
constexpr std::uint16_t kServerNameExtension = 0;  // RFC 6066 §3
constexpr unsigned char kHostNameType = 0;

// Reads big-endian fields off the front of a view; any read past its end makes it bad for good.
class Cursor {
 public:
  explicit Cursor(std::string_view bytes) noexcept : rest_(bytes) {}

  std::size_t number(std::size_t width) noexcept {
    if (!ok_ || rest_.size() < width) return fail();
    std::size_t value = 0;
    for (std::size_t i = 0; i < width; ++i) value = (value << 8) | static_cast<unsigned char>(rest_[i]);
    rest_.remove_prefix(width);
    return value;
  }
  std::string_view bytes(std::size_t count) noexcept {
    if (!ok_ || rest_.size() < count) {
      fail();
      return {};
    }
    const std::string_view taken = rest_.substr(0, count);
    rest_.remove_prefix(count);
    return taken;
  }
  // A vector with a `width`-byte length prefix.
  std::string_view vector(std::size_t width) noexcept { return bytes(number(width)); }

  [[nodiscard]] bool ok() const noexcept { return ok_; }
  [[nodiscard]] bool empty() const noexcept { return rest_.empty(); }

 private:
  std::size_t fail() noexcept {
    ok_ = false;
    rest_ = {};
    return 0;
  }
  std::string_view rest_;
  bool ok_ = true;
};

}  // namespace

// More than one entry is refused as OpenSSL and others refuse it: a list that one server reads as
// naming A and another as naming B must never pass.
bool read_server_name_extension(std::string_view body, std::string_view& name) noexcept {
  Cursor cursor(body);
  Cursor list(cursor.vector(2));
  if (!cursor.ok() || !cursor.empty()) return false;
  const std::size_t type = list.number(1);
  const std::string_view host = list.vector(2);
  if (!list.ok() || !list.empty() || type != kHostNameType || host.empty()) return false;
  name = host;
  return true;
}

SniReader::Verdict SniReader::answer(Verdict verdict) noexcept {
  verdict_ = verdict;
  std::string().swap(message_);  // the joined message is not needed once answered
  return verdict_;
}

SniReader::Verdict SniReader::feed(std::string_view bytes) {
  if (verdict_ != Verdict::need_more) return verdict_;
  if (taken_ == 0 && !bytes.empty() && static_cast<unsigned char>(bytes[0]) != kHandshakeRecord) {
    return answer(Verdict::not_tls);
  }
  while (!bytes.empty()) {
    if (taken_ >= kMaxSniHoldBytes) return answer(Verdict::unreadable);
    // Never more than the bound, however the bytes come.
    const std::size_t room = kMaxSniHoldBytes - taken_;
    if (record_left_ == 0) {
      // A record header, as far as it has come.
      const std::size_t want = std::min({kRecordHeaderBytes - header_have_, bytes.size(), room});
      for (std::size_t i = 0; i < want; ++i) header_[header_have_++] = static_cast<unsigned char>(bytes[i]);
      bytes.remove_prefix(want);
      taken_ += want;
      if (header_have_ < kRecordHeaderBytes) continue;
      header_have_ = 0;
      const std::size_t length = (std::size_t{header_[3]} << 8) | header_[4];
      // Only handshake records may come before the ClientHello is whole; a TLS record's major
      // version is 3; a handshake fragment is never empty (RFC 8446 §5.1) nor over 2^14.
      if (header_[0] != kHandshakeRecord || header_[1] != 3 || length == 0 || length > kMaxRecordPayload) {
        return answer(Verdict::unreadable);
      }
      record_left_ = length;
      continue;
    }
    const std::size_t want = std::min({record_left_, bytes.size(), room});
    if (message_.size() + want > kMaxClientHelloBytes) return answer(Verdict::unreadable);
    message_.append(bytes.substr(0, want));
    bytes.remove_prefix(want);
    taken_ += want;
    record_left_ -= want;
    if (message_.size() >= kHandshakeHeaderBytes) {
      const auto* head = reinterpret_cast<const unsigned char*>(message_.data());
      const std::size_t length = (std::size_t{head[1]} << 16) | (std::size_t{head[2]} << 8) | head[3];
      if (head[0] != kClientHello || length + kHandshakeHeaderBytes > kMaxClientHelloBytes) {
        return answer(Verdict::unreadable);
      }
      // Whole: what follows it (the rest of its record, later records) is not ours to read.
      if (message_.size() >= length + kHandshakeHeaderBytes) return read_client_hello();
    }
  }
  if (taken_ >= kMaxSniHoldBytes) return answer(Verdict::unreadable);
  return verdict_;
}

// The whole ClientHello is in message_ (RFC 8446 §4.1.2; the TLS 1.2 form is the same bytes).
SniReader::Verdict SniReader::read_client_hello() {
  Cursor message{std::string_view(message_)};
  message.number(1);                              // msg_type, checked
  Cursor hello(message.vector(3));                // exactly the message's length
  hello.number(2);                                // legacy_version
  hello.bytes(32);                                // random
  const std::string_view session = hello.vector(1);
  const std::string_view suites = hello.vector(2);
  const std::string_view compression = hello.vector(1);
  if (!hello.ok() || session.size() > 32 || suites.size() < 2 || suites.size() % 2 != 0 || compression.empty()) {
    return answer(Verdict::unreadable);
  }
  // A ClientHello without extensions at all (SSL 3.0's form) names no server.
  if (hello.empty()) return answer(Verdict::no_sni);
  Cursor extensions(hello.vector(2));
  if (!hello.ok() || !hello.empty()) return answer(Verdict::unreadable);
  bool named = false;
  while (!extensions.empty()) {
    const std::size_t type = extensions.number(2);
    const std::string_view body = extensions.vector(2);
    if (!extensions.ok()) return answer(Verdict::unreadable);
    if (type != kServerNameExtension) continue;
    // Two server_name extensions (RFC 8446 §4.2 forbids repeats): servers disagree on which counts.
    std::string_view name;
    if (named || !read_server_name_extension(body, name)) return answer(Verdict::unreadable);
    name_.assign(name);
    named = true;
  }
  return answer(named ? Verdict::sni : Verdict::no_sni);
}

bool sni_names_host(std::string_view sni, std::string_view host) noexcept {
  if (!sni.empty() && sni.back() == '.') sni.remove_suffix(1);
  return !sni.empty() && iequals(sni, host);
}

}  // namespace boxproxy
