// SPDX-License-Identifier: Apache-2.0
// proxy/dns_message: any bytes as a DNS query (the bridge's responder reads what a box sends).
//
// Invariants:
//   - a question's wire name is at most 255 bytes and its text name at most 254 characters;
//     name_is_text exactly when every label byte is [A-Za-z0-9_-];
//   - the question, rebuilt as a query of its own from its wire name, reads back the same;
//   - a reply starts with the query's id and has QR set, and read as a query it is dropped (a
//     response is never answered, so two responders cannot bounce packets between them);
//   - an error reply is 12 bytes.
#include <string>
#include <vector>

#include "proxy/wire/dns_message.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const std::string_view message = fuzz::as_text(data, size);
  const DnsQuery query = parse_dns_query(message);
  if (query.status == DnsQuery::Status::drop) return 0;
  if (query.status == DnsQuery::Status::error) {
    const std::string reply = build_dns_error(query.id, query.recursion_desired, query.rcode);
    FUZZ_CHECK(reply.size() == 12);
    FUZZ_CHECK(parse_dns_query(reply).status == DnsQuery::Status::drop);
    return 0;
  }
  const DnsQuestion& q = query.question;
  FUZZ_CHECK(q.wire_name.size() <= kMaxDnsNameBytes && !q.wire_name.empty() && q.wire_name.back() == '\0');
  FUZZ_CHECK(q.name.size() + 1 <= kMaxDnsNameBytes);
  bool text = true;
  std::size_t at = 0;
  while (q.wire_name[at] != '\0') {
    const auto length = static_cast<unsigned char>(q.wire_name[at]);
    for (std::size_t i = 1; i <= length; ++i) {
      const auto c = static_cast<unsigned char>(q.wire_name[at + i]);
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      text = text && ok;
    }
    at += 1 + length;
  }
  FUZZ_CHECK(at + 1 == q.wire_name.size());
  FUZZ_CHECK(text == q.name_is_text);

  std::string again = std::string("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12) + q.wire_name;
  again += static_cast<char>(q.type >> 8);
  again += static_cast<char>(q.type & 0xff);
  again += static_cast<char>(q.klass >> 8);
  again += static_cast<char>(q.klass & 0xff);
  const DnsQuery reread = parse_dns_query(again);
  FUZZ_CHECK(reread.status == DnsQuery::Status::question);
  FUZZ_CHECK(reread.question.name == q.name && reread.question.wire_name == q.wire_name);
  FUZZ_CHECK(reread.question.type == q.type && reread.question.id == 0x1234);

  const std::vector<IpAddress> answers{IpAddress::v4(0x01020304)};
  const std::string reply = build_dns_reply(q, DnsRcode::no_error, answers, 60);
  FUZZ_CHECK(static_cast<unsigned char>(reply[0]) == (q.id >> 8) && static_cast<unsigned char>(reply[1]) == (q.id & 0xff));
  FUZZ_CHECK((static_cast<unsigned char>(reply[2]) & 0x80) != 0);
  FUZZ_CHECK(parse_dns_query(reply).status == DnsQuery::Status::drop);
  return 0;
}
