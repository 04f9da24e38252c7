// SPDX-License-Identifier: Apache-2.0
// proxy/dns_message: the bridge's DNS queries read and replies built (SPEC §16), on messages made
// here byte by byte, and broken in every way the reader refuses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/wire/dns_message.h"

using namespace boxproxy;
using Status = DnsQuery::Status;

namespace {

std::string u16(std::size_t v) { return {static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)}; }

std::string wire(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) out += static_cast<char>(l.size()) + l;
  return out + '\0';
}

std::string query(const std::string& name_wire, std::size_t type = 1, std::size_t klass = 1, std::size_t flags = 0x0100,
                  std::size_t qd = 1, std::size_t an = 0, std::size_t ar = 0) {
  return u16(0xbeef) + u16(flags) + u16(qd) + u16(an) + u16(0) + u16(ar) + name_wire + u16(type) + u16(klass);
}

}  // namespace

TEST_CASE("an A and an AAAA question") {
  const auto q = parse_dns_query(query(wire({"www", "Example", "com"})));
  REQUIRE(q.status == Status::question);
  CHECK(q.question.id == 0xbeef);
  CHECK(q.question.recursion_desired);
  CHECK(q.question.name == "www.Example.com");
  CHECK(q.question.name_is_text);
  CHECK(q.question.wire_name == wire({"www", "Example", "com"}));
  CHECK(q.question.type == 1);
  const auto q6 = parse_dns_query(query(wire({"a", "b"}), 28, 1, 0));
  REQUIRE(q6.status == Status::question);
  CHECK(q6.question.type == 28);
  CHECK_FALSE(q6.question.recursion_desired);
  // Other types are read too: the responder answers them itself.
  CHECK(parse_dns_query(query(wire({"a", "b"}), 16)).status == Status::question);
  // An EDNS OPT record in the additional section is ignored.
  const std::string opt = std::string(1, '\0') + u16(41) + u16(1232) + u16(0) + u16(0) + u16(0);
  CHECK(parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x0100, 1, 0, 1) + opt).status == Status::question);
}

TEST_CASE("odd bytes in a label: read, but not text") {
  for (const std::string& label : std::vector<std::string>{"a.b", "a b", std::string("a\0b", 3), "\xff", "a*"}) {
    CAPTURE(label);
    const auto q = parse_dns_query(query(wire({label, "com"})));
    REQUIRE(q.status == Status::question);
    CHECK_FALSE(q.question.name_is_text);
  }
  CHECK(parse_dns_query(query(wire({"under_score", "x-y", "09"}))).question.name_is_text);
}

TEST_CASE("compression pointers are refused: the question's name is the message's first") {
  const std::string header = u16(1) + u16(0x0100) + u16(1) + u16(0) + u16(0) + u16(0);
  CHECK(parse_dns_query(header + "\xC0\x0C" + u16(1) + u16(1)).rcode == DnsRcode::format_error);  // itself
  CHECK(parse_dns_query(header + "\xC0\x04" + u16(1) + u16(1)).rcode == DnsRcode::format_error);  // header
  CHECK(parse_dns_query(header + "\xC0\x20" + u16(1) + u16(1) + std::string(30, '\0')).rcode ==
        DnsRcode::format_error);  // forwards
  const auto loop = parse_dns_query(header + "\x01" "a" "\xC0\x0C" + u16(1) + u16(1));  // a loop
  CHECK(loop.status == Status::error);
  CHECK(loop.rcode == DnsRcode::format_error);
}

TEST_CASE("names past their bounds") {
  CHECK(parse_dns_query(query(wire({std::string(63, 'a'), "com"}))).status == Status::question);
  CHECK(parse_dns_query(query(wire({std::string(64, 'a'), "com"}))).rcode == DnsRcode::format_error);
  // 255 bytes of wire form in all: four labels of 63 make 4 * 64 + 1 = 257.
  std::vector<std::string> long_name(4, std::string(63, 'a'));
  CHECK(parse_dns_query(query(wire(long_name))).rcode == DnsRcode::format_error);
  long_name.back() = std::string(61, 'a');  // 3 * 64 + 62 + 1 = 255
  CHECK(parse_dns_query(query(wire(long_name))).status == Status::question);
  // Extended label types (0x40, 0x80).
  CHECK(parse_dns_query(query(std::string("\x41" "a", 2) + '\0')).rcode == DnsRcode::format_error);
}

TEST_CASE("malformed and unanswerable messages") {
  CHECK(parse_dns_query("").status == Status::drop);
  CHECK(parse_dns_query(std::string(11, '\0')).status == Status::drop);
  // A response (QR set) is never answered.
  CHECK(parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x8100)).status == Status::drop);
  // Opcodes other than QUERY.
  const auto status = parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x1000));
  CHECK(status.status == Status::error);
  CHECK(status.rcode == DnsRcode::not_implemented);
  CHECK(status.id == 0xbeef);
  // Not one question, answers in a query.
  CHECK(parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x100, 2)).rcode == DnsRcode::format_error);
  CHECK(parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x100, 0)).rcode == DnsRcode::format_error);
  CHECK(parse_dns_query(query(wire({"a", "b"}), 1, 1, 0x100, 1, 1)).rcode == DnsRcode::format_error);
  // Class CHAOS.
  CHECK(parse_dns_query(query(wire({"version", "bind"}), 16, 3)).rcode == DnsRcode::not_implemented);
  // Every truncation of a good query.
  const std::string good = query(wire({"www", "example", "com"}));
  for (std::size_t n = 12; n < good.size(); ++n) {
    CAPTURE(n);
    const auto q = parse_dns_query(good.substr(0, n));
    CHECK(q.status == Status::error);
    CHECK(q.rcode == DnsRcode::format_error);
  }
}

TEST_CASE("replies") {
  const auto q = parse_dns_query(query(wire({"WWW", "example", "com"})));
  REQUIRE(q.status == Status::question);
  const std::vector<IpAddress> v4{IpAddress::v4(0x7f000002)};
  const std::string reply = build_dns_reply(q.question, DnsRcode::no_error, v4, 60);
  const std::string question_part = wire({"WWW", "example", "com"}) + u16(1) + u16(1);
  CHECK(reply == u16(0xbeef) + u16(0x8180) + u16(1) + u16(1) + u16(0) + u16(0) + question_part + "\xC0\x0C" + u16(1) +
                     u16(1) + u16(0) + u16(60) + u16(4) + std::string("\x7f\x00\x00\x02", 4));
  const std::string nx = build_dns_reply(q.question, DnsRcode::name_error);
  CHECK(nx == u16(0xbeef) + u16(0x8183) + u16(1) + u16(0) + u16(0) + u16(0) + question_part);
  std::array<std::uint8_t, 16> six{};
  six[0] = 0x20;
  six[15] = 1;
  const std::vector<IpAddress> v6{IpAddress::v6(six)};
  const std::string r6 = build_dns_reply(q.question, DnsRcode::no_error, v6, 5);
  CHECK(r6.size() == 12 + question_part.size() + 12 + 16);
  CHECK(r6.substr(r6.size() - 16) == std::string(reinterpret_cast<const char*>(six.data()), 16));
  CHECK(build_dns_error(7, false, DnsRcode::not_implemented) ==
        u16(7) + u16(0x8084) + std::string(8, '\0'));
}
