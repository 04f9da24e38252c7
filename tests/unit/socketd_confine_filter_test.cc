// The seccomp programs boxproxy loads (socketd/confine_filter_program.h): each one the binary
// embeds is, byte for byte, what socketd/confine_filter.cc's rules make with libseccomp now. A
// generated file that is stale, or that the generator wrote wrong, fails here.
#include <doctest/doctest.h>
#include <linux/filter.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "socketd/confine_filter.h"
#include "socketd/confine_filter_program.h"

namespace {

using boxproxy::ConfineFilter;

std::vector<sock_filter> built_now(ConfineFilter filter) {
  const boxproxy::ConfineFilterOwner context = boxproxy::build_confine_filter(filter);
  return boxproxy::export_confine_program(context.get());
}

bool same(std::span<const sock_filter> a, std::span<const sock_filter> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// The first instruction where the two differ, for the failure message.
std::string first_difference(std::span<const sock_filter> embedded, std::span<const sock_filter> built) {
  for (std::size_t i = 0; i < embedded.size() && i < built.size(); ++i) {
    if (std::memcmp(&embedded[i], &built[i], sizeof(sock_filter)) != 0) {
      return "instruction " + std::to_string(i) + ": embedded {" + std::to_string(embedded[i].code) + ", " +
             std::to_string(embedded[i].jt) + ", " + std::to_string(embedded[i].jf) + ", " +
             std::to_string(embedded[i].k) + "}, built {" + std::to_string(built[i].code) + ", " +
             std::to_string(built[i].jt) + ", " + std::to_string(built[i].jf) + ", " + std::to_string(built[i].k) +
             "}";
    }
  }
  return "lengths: embedded " + std::to_string(embedded.size()) + ", built " + std::to_string(built.size());
}

}  // namespace

TEST_CASE("each embedded seccomp program is the one its rules make") {
  for (const ConfineFilter filter : boxproxy::kConfineFilters) {
    CAPTURE(boxproxy::confine_filter_name(filter));
    const std::span<const sock_filter> embedded = boxproxy::confine_program(filter);
    const std::vector<sock_filter> built = built_now(filter);
    REQUIRE_FALSE(built.empty());
    CHECK(built.size() <= BPF_MAXINSNS);
    INFO(first_difference(embedded, built));
    CHECK(same(embedded, built));
  }
}

TEST_CASE("the programs differ where the commands do") {
  const auto serve = boxproxy::confine_program(ConfineFilter::serve);
  const auto bridge = boxproxy::confine_program(ConfineFilter::bridge);
  // serve's own calls (files, the audit, netlink) are not the bridge's.
  CHECK_FALSE(same(serve, bridge));
  // A box that may make Unix sockets has no socket rule (nor io_uring's).
  CHECK_FALSE(same(boxproxy::confine_program(ConfineFilter::box),
                   boxproxy::confine_program(ConfineFilter::box_unix_sockets)));
#if !defined(BOXPROXY_SANITIZE_BUILD)
  // Only a serve with a file to re-read may open one (the sanitizer build opens files anyway).
  CHECK_FALSE(same(serve, boxproxy::confine_program(ConfineFilter::serve_rereading)));
#endif
}

TEST_CASE("the filter's rules can be added again to a filter that held others") {
  // add_confine_rules resets what it is given: the program does not depend on what came before.
  const boxproxy::ConfineFilterOwner context = boxproxy::build_confine_filter(ConfineFilter::bridge);
  boxproxy::add_confine_rules(context.get(), ConfineFilter::serve);
  const std::vector<sock_filter> again = boxproxy::export_confine_program(context.get());
  CHECK(same(again, built_now(ConfineFilter::serve)));
}
