// SPDX-License-Identifier: Apache-2.0
// proxy/sni: the SNI check's reader, fed a client's first bytes in pieces.
//
// Input: a byte choosing the mode, the Split framing (fuzz_support.h), then the bytes.
// Mode 0 feeds the bytes as they are; mode 1 makes them the host_name of a well-formed ClientHello
// in one record, split at the first payload byte into a second record.
// Invariants:
//   - the answer is the same however the bytes are split as for all of them at once, and so is
//     the name;
//   - not_tls exactly when the first byte is not 22, and then nothing was taken;
//   - never more than kMaxSniHoldBytes taken while need_more, and need_more only while fewer bytes
//     than the bound were fed;
//   - an sni answer's name is non-empty and lies in the bytes fed;
//   - mode 1: the name comes back exactly (when the hello fits the bound), else unreadable.
#include <string>

#include "proxy/wire/sni.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;
using Verdict = SniReader::Verdict;

namespace {

std::string u8(std::size_t v) { return std::string(1, static_cast<char>(v & 0xff)); }
std::string u16(std::size_t v) { return u8(v >> 8) + u8(v); }
std::string u24(std::size_t v) { return u8(v >> 16) + u16(v); }

std::string hello_naming(std::string_view name) {
  std::string entry = u8(0) + u16(name.size()) + std::string(name);
  std::string sni = u16(0) + u16(entry.size() + 2) + u16(entry.size()) + entry;
  std::string body = u16(0x0303) + std::string(32, 'r') + u8(0) + u16(2) + u16(0x1301) + u8(1) + u8(0);
  body += u16(sni.size()) + sni;
  const std::string message = u8(1) + u24(body.size()) + body;
  // Two records: the first message byte alone, then the rest (when it fits one record).
  const std::string rest = message.substr(1);
  return u8(22) + u16(0x0301) + u16(1) + message.substr(0, 1) + u8(22) + u16(0x0303) + u16(rest.size() & 0xffff) + rest;
}

void check(const fuzz::Split& split, int mode, std::string_view name_sent) {
  const std::string_view bytes = split.payload;
  SniReader whole;
  const Verdict verdict = whole.feed(bytes);

  SniReader pieces;
  Verdict in_pieces = Verdict::need_more;
  std::size_t fed = 0;
  for (const std::size_t end : fuzz::prefix_ends(split)) {
    in_pieces = pieces.feed(bytes.substr(fed, end - fed));
    fed = end;
    if (in_pieces == Verdict::need_more) FUZZ_CHECK(pieces.taken() <= kMaxSniHoldBytes && pieces.taken() == fed);
  }
  FUZZ_CHECK(in_pieces == verdict);
  FUZZ_CHECK(pieces.name() == whole.name() || verdict != Verdict::sni);

  if (!bytes.empty()) FUZZ_CHECK((verdict == Verdict::not_tls) == (static_cast<unsigned char>(bytes[0]) != 22));
  if (verdict == Verdict::not_tls) FUZZ_CHECK(whole.taken() == 0);
  if (verdict == Verdict::need_more) FUZZ_CHECK(bytes.size() < kMaxSniHoldBytes);
  FUZZ_CHECK(whole.taken() <= bytes.size() && whole.taken() <= kMaxSniHoldBytes);
  if (verdict == Verdict::sni) {
    FUZZ_CHECK(!whole.name().empty());
    FUZZ_CHECK(bytes.find(whole.name()) != std::string_view::npos);
  }
  if (mode == 1) {
    // The message is 56 bytes and the name (its handshake header included).
    if (name_sent.empty() || 56 + name_sent.size() > kMaxClientHelloBytes) {
      FUZZ_CHECK(verdict == Verdict::unreadable);
    } else {
      FUZZ_CHECK(verdict == Verdict::sni && whole.name() == name_sent);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 40000) return 0;
  const int mode = data[0] % 2;
  fuzz::Split split = fuzz::take_split(fuzz::as_text(data + 1, size - 1));
  if (mode == 0) {
    check(split, 0, {});
    return 0;
  }
  const std::string name(split.payload);
  if (split.chunks.empty()) split.chunks.push_back(1);  // no bytes at all: still a hello to split
  const std::string hello = hello_naming(name);
  split.payload = hello;
  check(split, 1, name);
  return 0;
}
