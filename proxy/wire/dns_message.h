// SPDX-License-Identifier: Apache-2.0
// DNS messages for the bridge's responder in the box (SPEC §16), pure: a query's question read
// out of the bytes a box sent (RFC 1035 §4.1), and the reply built for it. No I/O.
//
// Hostile input is the rule here (any program in the box may send anything): a name is read
// within RFC 1035's bounds (labels of 1 to 63 bytes, 255 bytes in all), a compression pointer
// must point strictly before the label it replaces (so no loop, and at most one pointer per byte
// of the message is ever followed), and everything else about a question is checked before it
// is answered. A message that is not a query is never answered (no reflection of a response).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "table/address.h"

namespace boxproxy {

// RFC 1035 §4.2.1: a UDP message is at most 512 bytes without EDNS. A query is one question: a
// 12-byte header, a name of at most 255 bytes, 4 bytes of type and class, and perhaps an EDNS
// OPT record (11 bytes and its options); 512 bytes hold any real one, so a datagram is read into
// 512 bytes and a longer one is cut (and then malformed).
inline constexpr std::size_t kMaxDnsQueryBytes = 512;
// RFC 1035 §2.3.4.
inline constexpr std::size_t kMaxDnsNameBytes = 255;
inline constexpr std::size_t kMaxDnsLabelBytes = 63;

enum class DnsType : std::uint16_t { a = 1, aaaa = 28 };
inline constexpr std::uint16_t kDnsClassIn = 1;

// RFC 1035 §4.1.1 RCODE.
enum class DnsRcode : std::uint8_t {
  no_error = 0,
  format_error = 1,    // the query could not be read
  server_failure = 2,  // the proxy could not be asked (busy, gone)
  name_error = 3,      // NXDOMAIN: a name the proxy refuses
  not_implemented = 4, // an opcode other than QUERY, or a class other than IN
  refused = 5,
};

struct DnsQuestion {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  // The name's labels joined with dots, no trailing dot, as sent (case kept); "" for the root.
  std::string name;
  // False when a label holds a byte that a host name cannot (a dot, a space, a control byte...):
  // such a name is answered NXDOMAIN without asking anyone, since it cannot be passed on as text.
  bool name_is_text = true;
  std::string wire_name;  // the name in uncompressed wire form, echoed in the reply
  std::uint16_t type = 0;
  std::uint16_t klass = 0;
};

struct DnsQuery {
  enum class Status : std::uint8_t {
    question,   // a standard query of one question: question
    error,      // answered with rcode alone, no question section (id and flags echoed)
    drop,       // not answered at all: too short to reply to, or a response (QR set)
  };
  Status status = Status::drop;
  DnsRcode rcode = DnsRcode::no_error;  // with error
  std::uint16_t id = 0;                 // with error
  bool recursion_desired = false;       // with error
  DnsQuestion question;                 // with question
};

// Reads one DNS message (a UDP datagram, or a TCP message without its length prefix).
[[nodiscard]] DnsQuery parse_dns_query(std::string_view message);

// The reply to `question`: its header (id, RD echoed, QR, RA), the question as asked, and one
// answer record per address in `answers` (their family must be the question's type: A for IPv4,
// AAAA for IPv6), each with `ttl` seconds.
[[nodiscard]] std::string build_dns_reply(const DnsQuestion& question, DnsRcode rcode,
                                          std::span<const IpAddress> answers = {}, std::uint32_t ttl = 0);
// A reply with no question section, for a query answered error.
[[nodiscard]] std::string build_dns_error(std::uint16_t id, bool recursion_desired, DnsRcode rcode);

}  // namespace boxproxy
