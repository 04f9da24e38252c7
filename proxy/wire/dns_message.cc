// SPDX-License-Identifier: Apache-2.0
#include "proxy/wire/dns_message.h"

namespace boxproxy {
namespace {

constexpr std::size_t kHeaderBytes = 12;
constexpr std::uint16_t kFlagResponse = 0x8000;        // QR
constexpr std::uint16_t kOpcodeMask = 0x7800;
constexpr std::uint16_t kFlagRecursionDesired = 0x0100;  // RD
constexpr std::uint16_t kFlagRecursionAvailable = 0x0080;  // RA

std::uint16_t u16_at(std::string_view bytes, std::size_t at) noexcept {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(bytes[at]) << 8) | static_cast<unsigned char>(bytes[at + 1]));
}

void put_u16(std::string& out, std::uint32_t value) {
  out += static_cast<char>((value >> 8) & 0xff);
  out += static_cast<char>(value & 0xff);
}

// A byte a host name's label may hold as text (SPEC §5's names: [A-Za-z0-9_-]; the dot is the
// separator, so a dot inside a label could make two names of one).
bool text_byte(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Reads the question's name at `at` (RFC 1035 §4.1.2), up to and including its root label;
// `after` is where the type follows. A compression pointer (§4.1.4) is refused: the question's
// name is the message's first, so a pointer could only point into the header or forwards, and a
// forward pointer is how a loop is made. False for a malformed name.
bool read_name(std::string_view message, std::size_t at, DnsQuestion& question, std::size_t& after) {
  std::size_t wire = 1;  // the root label's zero byte
  while (true) {
    if (at >= message.size()) return false;
    const auto length = static_cast<unsigned char>(message[at]);
    // 0xC0 a pointer, 0x40 and 0x80 the obsolete extended label types.
    if ((length & 0xC0) != 0) return false;
    if (length == 0) break;
    if (at + 1 + length > message.size()) return false;
    wire += 1 + length;
    if (wire > kMaxDnsNameBytes) return false;
    const std::string_view label = message.substr(at + 1, length);
    if (!question.name.empty()) question.name += '.';
    question.name.append(label);
    question.wire_name += static_cast<char>(length);
    question.wire_name.append(label);
    for (const char c : label) {
      if (!text_byte(static_cast<unsigned char>(c))) question.name_is_text = false;
    }
    at += 1 + length;
  }
  question.wire_name += '\0';
  after = at + 1;
  return true;
}

}  // namespace

DnsQuery parse_dns_query(std::string_view message) {
  DnsQuery query;
  if (message.size() < kHeaderBytes) return query;  // no header to answer with: dropped
  const std::uint16_t flags = u16_at(message, 2);
  // A response is never answered: a box could otherwise bounce packets off the bridge.
  if ((flags & kFlagResponse) != 0) return query;
  query.id = u16_at(message, 0);
  query.recursion_desired = (flags & kFlagRecursionDesired) != 0;
  query.status = DnsQuery::Status::error;
  if ((flags & kOpcodeMask) != 0) {
    query.rcode = DnsRcode::not_implemented;  // IQUERY, STATUS, NOTIFY, UPDATE
    return query;
  }
  query.rcode = DnsRcode::format_error;
  // One question, no answers or authority; additional records (an EDNS OPT) are ignored.
  if (u16_at(message, 4) != 1 || u16_at(message, 6) != 0 || u16_at(message, 8) != 0) return query;
  DnsQuestion& question = query.question;
  question.id = query.id;
  question.recursion_desired = query.recursion_desired;
  std::size_t after = 0;
  if (!read_name(message, kHeaderBytes, question, after) || after + 4 > message.size()) {
    question = DnsQuestion{};
    return query;
  }
  question.type = u16_at(message, after);
  question.klass = u16_at(message, after + 2);
  if (question.klass != kDnsClassIn) {
    question = DnsQuestion{};
    query.rcode = DnsRcode::not_implemented;
    return query;
  }
  query.status = DnsQuery::Status::question;
  query.rcode = DnsRcode::no_error;
  return query;
}

std::string build_dns_reply(const DnsQuestion& question, DnsRcode rcode, std::span<const IpAddress> answers,
                            std::uint32_t ttl) {
  std::string out;
  out.reserve(kHeaderBytes + question.wire_name.size() + 4 + answers.size() * 28);
  put_u16(out, question.id);
  put_u16(out, kFlagResponse | (question.recursion_desired ? kFlagRecursionDesired : 0) | kFlagRecursionAvailable |
                   static_cast<std::uint16_t>(rcode));
  put_u16(out, 1);
  put_u16(out, static_cast<std::uint32_t>(answers.size()));
  put_u16(out, 0);
  put_u16(out, 0);
  out += question.wire_name;
  put_u16(out, question.type);
  put_u16(out, question.klass);
  for (const IpAddress& address : answers) {
    put_u16(out, 0xC000 | kHeaderBytes);  // the question's name
    put_u16(out, address.is_v4() ? static_cast<std::uint16_t>(DnsType::a) : static_cast<std::uint16_t>(DnsType::aaaa));
    put_u16(out, kDnsClassIn);
    put_u16(out, ttl >> 16);
    put_u16(out, ttl & 0xffff);
    put_u16(out, static_cast<std::uint32_t>(address.size()));
    out.append(reinterpret_cast<const char*>(address.bytes.data()), address.size());
  }
  return out;
}

std::string build_dns_error(std::uint16_t id, bool recursion_desired, DnsRcode rcode) {
  std::string out;
  put_u16(out, id);
  put_u16(out, kFlagResponse | (recursion_desired ? kFlagRecursionDesired : 0) | kFlagRecursionAvailable |
                   static_cast<std::uint16_t>(rcode));
  out.append(8, '\0');
  return out;
}

}  // namespace boxproxy
