// SPDX-License-Identifier: Apache-2.0
// table/host_list: entries, their errors, splitting, and matching (SPEC §5 step 2).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "table/host_list.h"

using namespace boxproxy;

namespace {

HostEntry entry(std::string_view text) {
  auto parsed = parse_host_entry(text);
  if (auto* error = std::get_if<std::string>(&parsed)) FAIL(text << ": " << *error);
  return std::get<HostEntry>(parsed);
}

std::string error_of(std::string_view text) {
  auto parsed = parse_host_entry(text);
  REQUIRE_MESSAGE(std::holds_alternative<std::string>(parsed), text);
  return std::get<std::string>(parsed);
}

std::vector<std::string> strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

}  // namespace

TEST_CASE("entries: names, wildcards, ports; lower-cased, trailing dot dropped") {
  struct Row {
    const char* text;
    const char* name;
    bool wildcard;
    int port;  // 0: none
  };
  const Row rows[] = {
      {"example.com", "example.com", false, 0},
      {"Example.COM", "example.com", false, 0},
      {"example.com.", "example.com", false, 0},
      {"*.example.com", "example.com", true, 0},
      {"*.Example.com.", "example.com", true, 0},
      {"example.com:8080", "example.com", false, 8080},
      {"example.com.:8080", "example.com", false, 8080},
      {"*.example.com:8443", "example.com", true, 8443},
      {"example.com:00443", "example.com", false, 443},
      {"example.com:65535", "example.com", false, 65535},
      {"a.b.c.example.co.uk", "a.b.c.example.co.uk", false, 0},
      {"x_y-z.example", "x_y-z.example", false, 0},
      {"1.2.3.com", "1.2.3.com", false, 0},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const HostEntry e = entry(row.text);
    CHECK(e.name == row.name);
    CHECK(e.wildcard == row.wildcard);
    if (row.port == 0) {
      CHECK_FALSE(e.port.has_value());
    } else {
      CHECK(e.port == row.port);
    }
  }
}

TEST_CASE("entry errors name the entry and say what is wrong") {
  struct Row {
    const char* text;
    const char* says;
  };
  const Row rows[] = {
      {"10.0.0.1", "IP address"},
      {"127.1", "IP address"},
      {"0x7f.1", "IP address"},
      {"2130706433", "IP address"},
      {"::1", "IP address"},
      {"[::1]", "IP address"},
      {"[::1]:443", "IP address"},
      {"10.0.0.1:443", "IP address"},
      {"fe80::1%eth0", "IP address"},
      {"*.10.0.0.1", "IP address"},
      {"http://example.com", "URL"},
      {"https://example.com/", "URL"},
      {"example.com/path", "path"},
      {"/etc/hosts", "path"},
      {"*", "bare '*'"},
      {"*.", "bare '*'"},
      {"*:443", "bare '*'"},
      {"com", "single label"},
      {"localhost", "single label"},
      {"*.com", "single label"},
      {"com.", "single label"},
      {"example.com:0", "bad port"},
      {"example.com:65536", "bad port"},
      {"example.com:", "bad port"},
      {"example.com:http", "bad port"},
      {"example.com:000080", "bad port"},
      {"a:b:c", "bad port"},
      {"exa mple.com", "bad characters"},
      {"*example.com", "bad characters"},
      {"a.*.example.com", "bad characters"},
      {"**.example.com", "bad characters"},
      {"*.*.example.com", "bad characters"},
      {"b\xc3\xbc" "cher.de", "bad characters"},
      {"user@example.com", "bad characters"},
      {"ex%41mple.com", "bad characters"},
      {".example.com", "empty label"},
      {"example..com", "empty label"},
      {"*..example.com", "empty label"},
      {"256.1.1.1", "all digits"},
      {"1.2.3.4.5", "all digits"},
      {"example.123", "all digits"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const std::string message = error_of(row.text);
    CAPTURE(message);
    CHECK(message.find(row.text) == 0);  // names the entry first
    CHECK(message.find(row.says) != std::string::npos);
  }
  std::string long_name;
  while (long_name.size() < 260) long_name += "abcdefghi.";
  long_name += "com";
  CHECK(error_of(long_name).find("253") != std::string::npos);
  CHECK_FALSE(error_of("").empty());
}

TEST_CASE("splitting --allow values and --allow-file text") {
  CHECK(strings(split_host_items("a.com,b.com c.com\td.com\n e.com,, ,f.com")) ==
        std::vector<std::string>{"a.com", "b.com", "c.com", "d.com", "e.com", "f.com"});
  CHECK(split_host_items("").empty());
  CHECK(split_host_items(" , ,").empty());
  CHECK(strings(split_host_items("*.example.com:8443")) == std::vector<std::string>{"*.example.com:8443"});
  CHECK(strings(split_host_file("# the list\nexample.com\n\n  *.example.org:8443  # the mirror\r\n#x\n  \nlast.com")) ==
        std::vector<std::string>{"example.com", "*.example.org:8443", "last.com"});
  CHECK(split_host_file("").empty());
  CHECK(split_host_file("\n\n# only comments\n").empty());
}

TEST_CASE("HostList: add drops repeats and reports errors") {
  HostList list;
  CHECK_FALSE(list.add("example.com").has_value());
  CHECK_FALSE(list.add("EXAMPLE.com.").has_value());
  CHECK_FALSE(list.add("*.example.com").has_value());
  CHECK_FALSE(list.add("example.com:8080").has_value());
  CHECK(list.entries().size() == 3);
  const auto error = list.add("10.0.0.1");
  REQUIRE(error.has_value());
  CHECK(error->find("10.0.0.1") == 0);
  CHECK(list.entries().size() == 3);
}

TEST_CASE("HostList: add takes a parsed entry as the text form does, repeats dropped") {
  HostList list;
  CHECK(list.add(HostEntry{.name = "example.com"}));
  CHECK(list.add(HostEntry{.name = "example.com", .wildcard = true}));
  CHECK(list.add(HostEntry{.name = "example.com", .port = 8080}));
  CHECK_FALSE(list.add(HostEntry{.name = "example.com"}));
  // The text form reads to the same entries: both are repeats now.
  CHECK_FALSE(list.add("EXAMPLE.com.").has_value());
  CHECK_FALSE(list.add("*.example.com").has_value());
  CHECK(list.entries().size() == 3);
  CHECK(list.entries()[2] == HostEntry{.name = "example.com", .port = 8080});
  CHECK(list.match("www.example.com", 443) == HostList::Match::listed);
  CHECK(list.match("example.com", 8080) == HostList::Match::listed);
  CHECK(list.match("example.com", 22) == HostList::Match::port_not_open);
}

TEST_CASE("HostList::match: case, trailing dot, wildcards strictly below, ports") {
  HostList list;
  for (const char* e : {"example.com", "*.wild.org", "api.service.net:8443", "*.pkg.dev:8080", "both.io",
                        "both.io:22"}) {
    REQUIRE_FALSE(list.add(e).has_value());
  }
  using M = HostList::Match;
  struct Row {
    const char* name;
    std::uint16_t port;
    M expected;
  };
  const Row rows[] = {
      {"example.com", 443, M::listed},
      {"example.com", 80, M::listed},
      {"EXAMPLE.COM", 443, M::listed},
      {"example.com.", 443, M::listed},
      {"Example.Com.", 80, M::listed},
      {"example.com", 8080, M::port_not_open},
      {"example.com", 22, M::port_not_open},
      {"www.example.com", 443, M::not_listed},  // a plain entry names only itself
      {"badexample.com", 443, M::not_listed},
      {"example.co", 443, M::not_listed},
      {"com", 443, M::not_listed},
      {"a.wild.org", 443, M::listed},
      {"A.B.Wild.Org.", 80, M::listed},
      {"wild.org", 443, M::not_listed},  // never the name itself
      {"xwild.org", 443, M::not_listed},
      {".wild.org", 443, M::not_listed},
      {"a.wild.org", 8443, M::port_not_open},
      {"api.service.net", 8443, M::listed},
      {"api.service.net", 443, M::port_not_open},  // a port given means that port only
      {"api.service.net", 80, M::port_not_open},
      {"x.pkg.dev", 8080, M::listed},
      {"x.pkg.dev", 443, M::port_not_open},
      {"pkg.dev", 8080, M::not_listed},
      {"both.io", 443, M::listed},
      {"both.io", 22, M::listed},
      {"both.io", 23, M::port_not_open},
      {"", 443, M::not_listed},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CAPTURE(row.port);
    CHECK(list.match(row.name, row.port) == row.expected);
  }
  const HostList empty;
  CHECK(empty.match("example.com", 443) == M::not_listed);
}
