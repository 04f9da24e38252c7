// SPDX-License-Identifier: Apache-2.0
// Java's trust store, written by run (socketd/java_trust_store.h).
#include "socketd/java_trust_store.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

namespace boxproxy {
namespace {

constexpr std::string_view kPemBegin = "-----BEGIN CERTIFICATE-----";
constexpr std::string_view kPemEnd = "-----END CERTIFICATE-----";

// The JKS layout (sun.security.provider.JavaKeyStore): magic, version 2, then each entry.
constexpr std::uint32_t kJksMagic = 0xFEEDFEED;
constexpr std::uint32_t kJksVersion = 2;
constexpr std::uint32_t kTrustedCertEntry = 2;
// What JavaKeyStore puts between the password and the store's bytes in its integrity hash.
constexpr std::string_view kJksWhitener = "Mighty Aphrodite";

// A certificate is a few KiB at most; a block far larger is not one.
constexpr std::size_t kMaxCertificateBytes = 64 * 1024;

void put_u16(std::string& out, std::uint32_t value) {
  out.push_back(static_cast<char>((value >> 8) & 0xff));
  out.push_back(static_cast<char>(value & 0xff));
}

void put_u32(std::string& out, std::uint32_t value) {
  put_u16(out, value >> 16);
  put_u16(out, value & 0xffff);
}

void put_u64(std::string& out, std::uint64_t value) {
  put_u32(out, static_cast<std::uint32_t>(value >> 32));
  put_u32(out, static_cast<std::uint32_t>(value & 0xffffffffU));
}

// Java's writeUTF of ASCII text: its length, then its bytes.
void put_utf(std::string& out, std::string_view text) {
  put_u16(out, static_cast<std::uint32_t>(text.size()));
  out += text;
}

int base64_digit(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// The DER bytes of one PEM block's body (white space ignored, '=' padding ends it); nullopt when
// it is not base64.
std::optional<std::string> base64_decoded(std::string_view body) {
  std::string out;
  std::uint32_t bits = 0;
  int held = 0;
  for (const char c : body) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    if (c == '=') break;
    const int digit = base64_digit(c);
    if (digit < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(digit);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  if (out.empty() || out.size() > kMaxCertificateBytes) return std::nullopt;
  return out;
}

// Every certificate of `pem`, DER, in order; nullopt when a block is broken.
std::optional<std::vector<std::string>> certificates_of(std::string_view pem) {
  std::vector<std::string> found;
  for (auto begin = pem.find(kPemBegin); begin != std::string_view::npos; begin = pem.find(kPemBegin, begin)) {
    begin += kPemBegin.size();
    const auto end = pem.find(kPemEnd, begin);
    if (end == std::string_view::npos) return std::nullopt;
    auto der = base64_decoded(pem.substr(begin, end - begin));
    if (!der) return std::nullopt;
    found.push_back(std::move(*der));
    begin = end + kPemEnd.size();
  }
  return found;
}

std::uint32_t rotated(std::uint32_t value, int bits) noexcept { return (value << bits) | (value >> (32 - bits)); }

}  // namespace

std::string sha1(std::string_view data) {
  std::array<std::uint32_t, 5> h = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string message(data);
  const std::uint64_t bit_length = static_cast<std::uint64_t>(data.size()) * 8;
  message.push_back(static_cast<char>(0x80));
  while (message.size() % 64 != 56) message.push_back('\0');
  put_u64(message, bit_length);
  for (std::size_t block = 0; block < message.size(); block += 64) {
    std::array<std::uint32_t, 80> w{};
    for (std::size_t i = 0; i < 16; ++i) {
      for (std::size_t b = 0; b < 4; ++b) w[i] = (w[i] << 8) | static_cast<unsigned char>(message[block + i * 4 + b]);
    }
    for (std::size_t i = 16; i < 80; ++i) w[i] = rotated(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (std::size_t i = 0; i < 80; ++i) {
      std::uint32_t f = 0;
      std::uint32_t k = 0;
      if (i < 20) {
        f = (b & c) | (~b & d), k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d, k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d, k = 0xCA62C1D6;
      }
      const std::uint32_t next = rotated(a, 5) + f + e + k + w[i];
      e = d, d = c, c = rotated(b, 30), b = a, a = next;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
  }
  std::string digest;
  for (const std::uint32_t word : h) put_u32(digest, word);
  return digest;
}

std::optional<std::string> jks_trust_store(std::string_view pem, std::string_view password) {
  const auto certificates = certificates_of(pem);
  if (!certificates || certificates->empty()) return std::nullopt;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  std::string store;
  put_u32(store, kJksMagic);
  put_u32(store, kJksVersion);
  put_u32(store, static_cast<std::uint32_t>(certificates->size()));
  std::size_t n = 0;
  for (const std::string& der : *certificates) {
    put_u32(store, kTrustedCertEntry);
    put_utf(store, fmt::format("boxproxy-{}", ++n));
    put_u64(store, static_cast<std::uint64_t>(now.count()));
    put_utf(store, "X.509");
    put_u32(store, static_cast<std::uint32_t>(der.size()));
    store += der;
  }
  // The integrity hash: the password as Java's chars (UTF-16, big-endian), the whitener, the store.
  std::string hashed;
  for (const char c : password) {
    hashed.push_back('\0');
    hashed.push_back(c);
  }
  hashed += kJksWhitener;
  hashed += store;
  store += sha1(hashed);
  return store;
}

}  // namespace boxproxy
