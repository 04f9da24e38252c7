// SPDX-License-Identifier: Apache-2.0
// proxy/first_bytes_gate: the SNI and Host checks on a tunnel's first client bytes (SPEC §16), as
// the tunnel session drives them: start() with the early bytes, feed() with each read, finish() at
// the client's FIN. One table of first-byte forms, each judged whole and fed one byte a read (the
// verdict must not depend on how the bytes came); then what goes upstream while it waits, the FIN,
// and the bounds.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/wire/first_bytes_gate.h"

using namespace boxproxy;
using Verdict = FirstBytesGate::Verdict;

namespace {

constexpr std::string_view kHost = "good.test";
constexpr std::size_t kMaxHead = 1024;

std::string be16(std::size_t v) { return {static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)}; }

// A handshake message of `type` holding `body`, in one TLS handshake record.
std::string tls_record(char type, const std::string& body) {
  const std::string message = std::string(1, type) + '\0' + be16(body.size()) + body;
  return "\x16\x03\x01" + be16(message.size()) + message;
}

// A well-formed ClientHello in one record; its server_name names `sni`, or it has none when empty.
std::string client_hello(std::string_view sni) {
  std::string extensions;
  if (!sni.empty()) {
    const std::string entry = '\0' + be16(sni.size()) + std::string(sni);  // host_name
    extensions = be16(0) + be16(entry.size() + 2) + be16(entry.size()) + entry;
  }
  // legacy_version, random, an empty session id, one cipher suite, null compression, extensions.
  const std::string body =
      be16(0x0303) + std::string(32, 'r') + '\0' + be16(2) + be16(0x1301) + "\x01" + '\0' + be16(extensions.size());
  return tls_record(1, body + extensions);
}

std::string request(std::string_view headers) { return "GET / HTTP/1.1\r\n" + std::string(headers) + "\r\n"; }

Verdict whole(std::string_view bytes, std::uint16_t port, std::size_t max_head = kMaxHead) {
  FirstBytesGate gate(kHost, port, max_head);
  return gate.start(std::string(bytes));
}

// Fed one byte a read after an empty start, as a dribbling client sends them: the verdict, and
// how many bytes it took to come (`bytes.size() + 1` when it never came).
struct Dribbled {
  Verdict verdict = Verdict::wait;
  std::size_t at = 0;
};
Dribbled dribbled(std::string_view bytes, std::uint16_t port) {
  FirstBytesGate gate(kHost, port, kMaxHead);
  Dribbled out{gate.start({}), 0};
  while (out.verdict == Verdict::wait && out.at < bytes.size()) out.verdict = gate.feed(bytes.substr(out.at++, 1));
  if (out.verdict == Verdict::wait) out.at = bytes.size() + 1;
  return out;
}

struct Form {
  std::string_view what;
  std::string bytes;
  std::uint16_t port;
  Verdict verdict;
  bool at_last_byte;  // the verdict comes only with the last byte (a whole ClientHello, head or line)
};

}  // namespace

TEST_CASE("first bytes gate: each form, whole and one byte a read") {
  const Form forms[] = {
      {"a ClientHello naming the host", client_hello("good.test"), 443, Verdict::pass, true},
      {"a ClientHello naming it in another case, with a dot", client_hello("GOOD.Test."), 443, Verdict::pass, true},
      {"a ClientHello naming another host", client_hello("evil.test"), 443, Verdict::sni_mismatch, true},
      {"a ClientHello naming a host below it", client_hello("www.good.test"), 443, Verdict::sni_mismatch, true},
      {"a ClientHello without SNI", client_hello(""), 443, Verdict::pass, true},
      {"a handshake that is no ClientHello", tls_record(2, std::string(40, 'x')), 443, Verdict::sni_mismatch, false},
      {"SSH's greeting (at its line end)", "SSH-2.0-OpenSSH_9.6\r\n", 22, Verdict::pass, true},
      {"binary bytes", std::string("\x00\x01\x02\xff", 4), 443, Verdict::pass, false},
      {"a request naming the host", request("Host: good.test\r\n"), 80, Verdict::pass, true},
      {"a request naming host:80", request("Host: good.test:80\r\n"), 80, Verdict::pass, true},
      {"a request naming host:port", request("Host: good.test:8080\r\n"), 8080, Verdict::pass, true},
      {"a request naming the host without the port", request("Host: good.test\r\n"), 8080, Verdict::host_mismatch,
       true},
      {"a request naming another host", request("Host: evil.test\r\n"), 80, Verdict::host_mismatch, true},
      {"a request naming another port", request("Host: good.test:8080\r\n"), 80, Verdict::host_mismatch, true},
      {"a request without Host", request(""), 80, Verdict::host_mismatch, true},
      {"a request with two Hosts", request("Host: good.test\r\nHost: good.test\r\n"), 80, Verdict::host_mismatch, true},
  };
  for (const Form& form : forms) {
    CAPTURE(form.what);
    CHECK(whole(form.bytes, form.port) == form.verdict);
    const Dribbled split = dribbled(form.bytes, form.port);
    CHECK(split.verdict == form.verdict);
    if (form.at_last_byte) CHECK(split.at == form.bytes.size());
    else CHECK(split.at < form.bytes.size());
  }
}

TEST_CASE("first bytes gate: a ClientHello is held whole, then goes up whole") {
  const std::string hello = client_hello("good.test");
  FirstBytesGate gate(kHost, 443, kMaxHead);
  REQUIRE(gate.start(hello.substr(0, 10)) == Verdict::wait);
  CHECK(gate.take_forwardable().empty());
  for (std::size_t at = 10; at + 1 < hello.size(); ++at) {
    REQUIRE(gate.feed(hello.substr(at, 1)) == Verdict::wait);
    REQUIRE(gate.take_forwardable().empty());
  }
  CHECK(gate.feed(hello.substr(hello.size() - 1)) == Verdict::pass);
  CHECK(gate.unforwarded() == hello);
}

TEST_CASE("first bytes gate: the first line goes up while the Host reader waits, each byte once") {
  FirstBytesGate gate(kHost, 80, kMaxHead);
  REQUIRE(gate.start("GET / HT") == Verdict::wait);
  CHECK(gate.take_forwardable() == "GET / HT");
  CHECK(gate.take_forwardable().empty());  // nothing new since
  // The version word's slash ends what may go: the line could end any time after it.
  REQUIRE(gate.feed("TP/1.1\r\nHost: good.test\r\n") == Verdict::wait);
  CHECK(gate.take_forwardable() == "TP");
  CHECK(gate.take_forwardable().empty());
  REQUIRE(gate.feed("\r\n") == Verdict::pass);
  CHECK(gate.unforwarded() == "/1.1\r\nHost: good.test\r\n\r\n");
}

TEST_CASE("first bytes gate: a short message with no line end goes up and passes at the FIN") {
  FirstBytesGate gate(kHost, 7, kMaxHead);
  REQUIRE(gate.start("ping") == Verdict::wait);
  CHECK(gate.take_forwardable() == "ping");
  CHECK(gate.finish() == Verdict::pass);
  CHECK(gate.unforwarded().empty());
}

TEST_CASE("first bytes gate: at the FIN an unfinished head is a mismatch, an unfinished ClientHello is not") {
  FirstBytesGate head(kHost, 80, kMaxHead);
  REQUIRE(head.start("GET / HTTP/1.1\r\nHost: good.test\r\n") == Verdict::wait);
  CHECK(head.finish() == Verdict::host_mismatch);

  const std::string hello = client_hello("evil.test");
  FirstBytesGate tls(kHost, 443, kMaxHead);
  REQUIRE(tls.start(hello.substr(0, hello.size() - 1)) == Verdict::wait);
  CHECK(tls.finish() == Verdict::pass);  // no server acts on half a ClientHello
  CHECK(tls.unforwarded() == hello.substr(0, hello.size() - 1));

  FirstBytesGate nothing(kHost, 443, kMaxHead);
  REQUIRE(nothing.start({}) == Verdict::wait);
  CHECK(nothing.finish() == Verdict::pass);
  CHECK(nothing.unforwarded().empty());
}

TEST_CASE("first bytes gate: room while both readers wait, then the one left") {
  FirstBytesGate small(kHost, 80, 100);
  REQUIRE(small.start({}) == Verdict::wait);
  CHECK(small.room() == kMaxSniHoldBytes);  // the larger bound while either may read it
  CHECK(small.overflow_reason() == Reason::sni_mismatch);
  REQUIRE(small.feed("G") == Verdict::wait);
  CHECK(small.room() == 99);
  CHECK(small.overflow_reason() == Reason::host_mismatch);

  FirstBytesGate large(kHost, 443, 2 * kMaxSniHoldBytes);
  REQUIRE(large.start({}) == Verdict::wait);
  CHECK(large.room() == 2 * kMaxSniHoldBytes);
  REQUIRE(large.feed("\x16") == Verdict::wait);
  CHECK(large.room() == kMaxSniHoldBytes - 1);  // TLS: the Host reader has left
  CHECK(large.overflow_reason() == Reason::sni_mismatch);
}

TEST_CASE("first bytes gate: a ClientHello dribbled in 1-byte records reaches kMaxSniHoldBytes and is refused") {
  // A ClientHello message that claims 16 KiB, one payload byte a record: six bytes held a byte read.
  std::string message = "\x01";
  message += std::string("\x00\x3f\xfc", 3);
  message += std::string(kMaxSniHoldBytes, 'p');
  std::string records;
  for (std::size_t i = 0; records.size() < kMaxSniHoldBytes; ++i) records += "\x16\x03\x01" + be16(1) + message[i];
  records.resize(kMaxSniHoldBytes);
  FirstBytesGate gate(kHost, 443, kMaxHead);
  REQUIRE(gate.start(records.substr(0, kMaxSniHoldBytes - 1)) == Verdict::wait);
  CHECK(gate.room() == 1);
  CHECK(gate.overflow_reason() == Reason::sni_mismatch);
  CHECK(gate.feed(records.substr(kMaxSniHoldBytes - 1)) == Verdict::sni_mismatch);
  CHECK(gate.room() == 0);
}

TEST_CASE("first bytes gate: a head of exactly max_head_bytes is read, one byte more is a mismatch") {
  // A request line, a Host and one more header whose value fills the head to `size` bytes.
  const auto head_of = [](std::size_t size) {
    const std::string start = "GET / HTTP/1.1\r\nHost: good.test\r\nX: ";
    return start + std::string(size - start.size() - 4, 'x') + "\r\n\r\n";
  };
  const std::size_t bound = 64;
  CHECK(whole(head_of(bound), 80, bound) == Verdict::pass);

  const std::string over = head_of(bound + 1);
  FirstBytesGate gate(kHost, 80, bound);
  REQUIRE(gate.start(over.substr(0, bound - 1)) == Verdict::wait);
  CHECK(gate.room() == 1);
  CHECK(gate.overflow_reason() == Reason::host_mismatch);
  CHECK(gate.feed(over.substr(bound - 1, 1)) == Verdict::host_mismatch);
  CHECK(gate.room() == 0);
}
