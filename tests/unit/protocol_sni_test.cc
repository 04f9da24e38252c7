// SPDX-License-Identifier: Apache-2.0
// proxy/sni: the SNI check's reader (SPEC §16), on ClientHellos built here field by field, fed
// whole, split at every byte, over several records, and broken in every way the reader refuses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/wire/sni.h"

using namespace boxproxy;
using Verdict = SniReader::Verdict;

namespace {

std::string u8(std::size_t v) { return std::string(1, static_cast<char>(v & 0xff)); }
std::string u16(std::size_t v) { return u8(v >> 8) + u8(v); }
std::string u24(std::size_t v) { return u8(v >> 16) + u16(v); }

std::string extension(std::size_t type, const std::string& body) { return u16(type) + u16(body.size()) + body; }

// The server_name extension naming `name` (one host_name entry).
std::string server_name(const std::string& name) {
  const std::string entry = u8(0) + u16(name.size()) + name;
  return extension(0, u16(entry.size()) + entry);
}

// A ClientHello message (handshake header included) carrying `extensions` (none at all when
// `with_extensions` is false).
std::string client_hello(const std::string& extensions, bool with_extensions = true) {
  std::string body = u16(0x0303) + std::string(32, 'r');  // legacy_version, random
  body += u8(32) + std::string(32, 's');                   // legacy_session_id
  body += u16(4) + u16(0x1301) + u16(0x1302);             // cipher_suites
  body += u8(1) + u8(0);                                  // compression: null
  if (with_extensions) body += u16(extensions.size()) + extensions;
  return u8(1) + u24(body.size()) + body;
}

// A realistic set of extensions around the server_name one.
std::string hello_naming(const std::string& name) {
  const std::string groups = extension(10, u16(4) + u16(0x001d) + u16(0x0017));
  const std::string versions = extension(43, u8(2) + u16(0x0304));
  return client_hello(groups + server_name(name) + versions + extension(21, std::string(100, '\0')));
}

// `message` in TLS records of at most `record_size` payload bytes each.
std::string in_records(const std::string& message, std::size_t record_size = 16384, std::size_t version = 0x0301) {
  std::string out;
  for (std::size_t at = 0; at < message.size(); at += record_size) {
    const std::string part = message.substr(at, record_size);
    out += u8(22) + u16(version) + u16(part.size()) + part;
  }
  return out;
}

Verdict feed_whole(const std::string& bytes, std::string* name = nullptr) {
  SniReader reader;
  const Verdict verdict = reader.feed(bytes);
  if (name != nullptr) *name = reader.name();
  return verdict;
}

// Fed in pieces of `piece` bytes: the answer comes exactly when its last byte has.
Verdict feed_in_pieces(const std::string& bytes, std::size_t piece, std::string* name = nullptr) {
  SniReader reader;
  Verdict verdict = Verdict::need_more;
  for (std::size_t at = 0; at < bytes.size() && verdict == Verdict::need_more; at += piece) {
    verdict = reader.feed(std::string_view(bytes).substr(at, piece));
  }
  if (name != nullptr) *name = reader.name();
  return verdict;
}

}  // namespace

TEST_CASE("a ClientHello naming a host, whole") {
  std::string name;
  CHECK(feed_whole(in_records(hello_naming("example.com")), &name) == Verdict::sni);
  CHECK(name == "example.com");
}

TEST_CASE("split at every byte: need_more before the last byte of the message, the same answer at it") {
  const std::string hello = in_records(hello_naming("www.example.org"));
  for (std::size_t cut = 1; cut < hello.size(); ++cut) {
    CAPTURE(cut);
    SniReader reader;
    CHECK(reader.feed(std::string_view(hello).substr(0, cut)) == Verdict::need_more);
    CHECK(reader.feed(std::string_view(hello).substr(cut)) == Verdict::sni);
    CHECK(reader.name() == "www.example.org");
  }
  std::string name;
  CHECK(feed_in_pieces(hello, 1, &name) == Verdict::sni);
  CHECK(name == "www.example.org");
}

TEST_CASE("over several records, each split at every byte") {
  const std::string message = hello_naming("split.example");
  for (const std::size_t record : {1u, 2u, 7u, 100u, 255u}) {
    CAPTURE(record);
    const std::string bytes = in_records(message, record);
    for (const std::size_t piece : {1u, 3u, 5u, 6u, 64u, 100000u}) {
      CAPTURE(piece);
      std::string name;
      CHECK(feed_in_pieces(bytes, piece, &name) == Verdict::sni);
      CHECK(name == "split.example");
    }
  }
}

TEST_CASE("the record version's minor byte is not checked; an SSL 3.0-style 0x0300 record reads too") {
  CHECK(feed_whole(in_records(hello_naming("a.example"), 16384, 0x0300)) == Verdict::sni);
  CHECK(feed_whole(in_records(hello_naming("a.example"), 16384, 0x0303)) == Verdict::sni);
}

TEST_CASE("bytes after the ClientHello are not read (the answer is given at its end)") {
  const std::string hello = in_records(hello_naming("a.example"));
  SniReader reader;
  CHECK(reader.feed(hello + "\x17\x03\x03garbage after") == Verdict::sni);
  CHECK(reader.feed("anything") == Verdict::sni);
  // Another message joined in the same record after the ClientHello does not change the answer.
  CHECK(feed_whole(in_records(hello_naming("a.example") + "\x02\x00\x00\x00")) == Verdict::sni);
}

TEST_CASE("no SNI: no server_name extension, or no extensions at all") {
  const std::string groups = extension(10, u16(2) + u16(0x001d));
  CHECK(feed_whole(in_records(client_hello(groups))) == Verdict::no_sni);
  CHECK(feed_whole(in_records(client_hello(""))) == Verdict::no_sni);
  CHECK(feed_whole(in_records(client_hello("", false))) == Verdict::no_sni);
  CHECK(feed_in_pieces(in_records(client_hello("", false)), 1) == Verdict::no_sni);
}

TEST_CASE("not TLS: the first byte is not a handshake record's, answered at the first byte") {
  for (const char* first : {"GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "\x80\x2e\x01\x03\x01", "\x17\x03\x03",
                            "\x15\x03\x03\x00\x02\x02\x28", "\x00"}) {
    CAPTURE(first);
    SniReader reader;
    CHECK(reader.feed(std::string_view(first, std::string_view(first).empty() ? 1 : std::string_view(first).size())) ==
          Verdict::not_tls);
    CHECK(reader.taken() == 0);
  }
  SniReader reader;
  CHECK(reader.feed("") == Verdict::need_more);  // nothing yet is no answer
  CHECK(reader.feed("G") == Verdict::not_tls);
}

TEST_CASE("a name with odd bytes is returned exactly as sent") {
  const std::string odd = std::string("ex\0ample.com", 12) + "\xff\r\n.";
  std::string name;
  CHECK(feed_whole(in_records(hello_naming(odd)), &name) == Verdict::sni);
  CHECK(name == odd);
  CHECK(feed_whole(in_records(hello_naming("EXAMPLE.com.")), &name) == Verdict::sni);
  CHECK(name == "EXAMPLE.com.");
  const std::string longest(65535 - 100, 'a');  // fits a ClientHello only under the bound's refusal
  CHECK(feed_whole(in_records(hello_naming(longest))) == Verdict::unreadable);
}

TEST_CASE("sni_names_host: ASCII case and one trailing dot of the SNI ignored, nothing else") {
  CHECK(sni_names_host("example.com", "example.com"));
  CHECK(sni_names_host("EXAMPLE.Com", "example.com"));
  CHECK(sni_names_host("example.com.", "Example.COM"));
  CHECK_FALSE(sni_names_host("example.com..", "example.com"));
  CHECK_FALSE(sni_names_host("other.com", "example.com"));
  CHECK_FALSE(sni_names_host("www.example.com", "example.com"));
  CHECK_FALSE(sni_names_host("example.co", "example.com"));
  CHECK_FALSE(sni_names_host(std::string("example.com\0", 12), "example.com"));
  CHECK_FALSE(sni_names_host("", ""));
  CHECK_FALSE(sni_names_host(".", ""));
  CHECK_FALSE(sni_names_host("\xc5xample.com", "\xe5xample.com"));  // no case folding outside ASCII
}

TEST_CASE("unreadable: broken records") {
  const std::string message = hello_naming("a.example");
  // A record of another type before the ClientHello is whole.
  std::string mixed = in_records(message.substr(0, 10)) + u8(23) + u16(0x0303) + u16(3) + "abc";
  CHECK(feed_whole(mixed) == Verdict::unreadable);
  // A major version other than 3.
  CHECK(feed_whole(u8(22) + u16(0x0201) + u16(message.size()) + message) == Verdict::unreadable);
  // An empty handshake fragment.
  CHECK(feed_whole(u8(22) + u16(0x0301) + u16(0) + in_records(message)) == Verdict::unreadable);
  // A record over 2^14.
  CHECK(feed_whole(u8(22) + u16(0x0301) + u16(16385) + std::string(16385, '\1')) == Verdict::unreadable);
}

TEST_CASE("unreadable: not a ClientHello, or a ClientHello that does not parse") {
  std::string hello = hello_naming("a.example");
  std::string server_hello = hello;
  server_hello[0] = 2;
  CHECK(feed_whole(in_records(server_hello)) == Verdict::unreadable);
  // Declared longer than the bound.
  CHECK(feed_whole(in_records(u8(1) + u24(kMaxClientHelloBytes))) == Verdict::unreadable);
  CHECK(feed_in_pieces(in_records(u8(1) + u24(0xffffff)), 1) == Verdict::unreadable);
  // Every truncation of the body, declared as its real length: the fields run out.
  const std::string body = hello.substr(4);
  for (std::size_t n = 0; n < body.size(); ++n) {
    CAPTURE(n);
    const Verdict v = feed_whole(in_records(u8(1) + u24(n) + body.substr(0, n)));
    // Cut exactly after the compression methods, it is a ClientHello without extensions.
    if (n == 2 + 32 + 33 + 6 + 2) {
      CHECK(v == Verdict::no_sni);
    } else {
      CHECK(v == Verdict::unreadable);
    }
  }
  // Bytes after the extensions.
  CHECK(feed_whole(in_records(client_hello(server_name("a.example")) + "")) == Verdict::sni);
  std::string trailing = client_hello(server_name("a.example"));
  trailing += "x";
  trailing.replace(1, 3, u24(trailing.size() - 4));
  CHECK(feed_whole(in_records(trailing)) == Verdict::unreadable);
}

TEST_CASE("unreadable: server_name lists that servers could read differently") {
  // Two server_name extensions.
  CHECK(feed_whole(in_records(client_hello(server_name("a.example") + server_name("b.example")))) ==
        Verdict::unreadable);
  // Two entries in one list.
  const std::string two = u8(0) + u16(9) + "a.example" + u8(0) + u16(9) + "b.example";
  CHECK(feed_whole(in_records(client_hello(extension(0, u16(two.size()) + two)))) == Verdict::unreadable);
  // Another name type.
  const std::string other = u8(1) + u16(9) + "a.example";
  CHECK(feed_whole(in_records(client_hello(extension(0, u16(other.size()) + other)))) == Verdict::unreadable);
  // An empty host_name, an empty extension, a list length that does not fit.
  const std::string empty_name = u8(0) + u16(0);
  CHECK(feed_whole(in_records(client_hello(extension(0, u16(3) + empty_name)))) == Verdict::unreadable);
  CHECK(feed_whole(in_records(client_hello(extension(0, "")))) == Verdict::unreadable);
  CHECK(feed_whole(in_records(client_hello(extension(0, u16(50) + u8(0) + u16(9) + "a.example")))) ==
        Verdict::unreadable);
  // An extension whose length runs past the list.
  CHECK(feed_whole(in_records(client_hello(u16(0) + u16(200) + "short"))) == Verdict::unreadable);
}

TEST_CASE("read_server_name_extension: one host_name's body read alone (the inspector's check of a box's hello)") {
  const std::string body = server_name("api.example").substr(4);  // without the type and length
  std::string_view name;
  REQUIRE(read_server_name_extension(body, name));
  CHECK(name == "api.example");
  CHECK((name.data() > body.data() && name.data() + name.size() == body.data() + body.size()));  // a view into it
  const std::string two = u8(0) + u16(9) + "a.example" + u8(0) + u16(9) + "b.example";
  CHECK_FALSE(read_server_name_extension(u16(two.size()) + two, name));
  CHECK_FALSE(read_server_name_extension(body + "x", name));  // a byte after the list
  CHECK_FALSE(read_server_name_extension(u16(3) + u8(0) + u16(0), name));  // an empty name
  CHECK_FALSE(read_server_name_extension("", name));
}

TEST_CASE("garbage that looks like TLS is bounded: answered by kMaxSniHoldBytes at the latest") {
  // A handshake record stream that never completes its message: 1-byte records of a message
  // declared just under the bound.
  std::string bytes = in_records(u8(1) + u24(kMaxClientHelloBytes - 4) + std::string(kMaxClientHelloBytes, 'x'), 1);
  SniReader reader;
  Verdict verdict = Verdict::need_more;
  std::size_t fed = 0;
  while (verdict == Verdict::need_more && fed < bytes.size()) {
    verdict = reader.feed(std::string_view(bytes).substr(fed, 1000));
    fed += 1000;
    CHECK(reader.taken() <= kMaxSniHoldBytes);
  }
  CHECK(verdict == Verdict::unreadable);
  CHECK(fed <= kMaxSniHoldBytes + 1000);
  // A large ClientHello that fits the bound still reads, in one record and in many.
  const std::string big = client_hello(extension(21, std::string(12000, '\0')) + server_name("big.example"));
  CHECK(feed_whole(in_records(big)) == Verdict::sni);
  CHECK(feed_in_pieces(in_records(big, 4000), 333) == Verdict::sni);
  // Just past it.
  const std::string too_big = client_hello(extension(21, std::string(kMaxClientHelloBytes, '\0')) + server_name("a.b"));
  CHECK(feed_whole(in_records(too_big)) == Verdict::unreadable);
  CHECK(feed_in_pieces(in_records(too_big), 1) == Verdict::unreadable);
}

TEST_CASE("the answer does not change once given") {
  SniReader reader;
  CHECK(reader.feed("\x16") == Verdict::need_more);
  CHECK(reader.feed(std::string_view("\x03\x01\x00\x00", 4)) == Verdict::unreadable);
  CHECK(reader.feed(in_records(hello_naming("a.example"))) == Verdict::unreadable);
  CHECK(reader.verdict() == Verdict::unreadable);
}
