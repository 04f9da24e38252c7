// SPDX-License-Identifier: Apache-2.0
// The addresses the in-box bridge's DNS responder gives out (SPEC §16), and the names they stand
// for. Pure: no I/O.
//
// A name the proxy would let through is answered with an address of its own from a range no
// origin uses: 198.18.0.0/15 (RFC 2544, benchmarking) for A, and fd62:6f78:7072::/96 (a unique
// local prefix: "box" "pr") for AAAA, the same index in both. When the box connects to it, the
// capture rules redirect the connection to the bridge, which looks the address up here and asks
// the proxy for the name. So:
//   - the box never learns a real address, refused name or not (SPEC §16);
//   - a connection is judged by the name the program resolved, whatever address a CDN shares
//     with other sites, and the SNI check compares against that name;
//   - the proxy resolves the name itself, as for any socks5h:// client.
//
// Bounded: at most kMaxNames names are held; past that, the name least recently given out or
// connected to gives up its address to the new one (a program that kept an answer that long
// reaches the newer name's address: the proxy still judges that name, so nothing is widened).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "table/address.h"

namespace boxproxy {

class NameAddresses {
 public:
  // 2^17 addresses in 198.18.0.0/15; fewer names are held so that an address is not reused
  // while a program could still hold it fresh. 16,384 names of at most 255 bytes: under 8 MiB.
  static constexpr std::size_t kMaxNames = 16 * 1024;

  explicit NameAddresses(std::size_t max_names = kMaxNames);

  // The address that stands for `name` (lower case, no trailing dot, as the caller canonicalised
  // it), IPv4 or IPv6: the same one for as long as the name is held.
  [[nodiscard]] IpAddress address_for(std::string_view name, IpAddress::Family family);

  // The name an address stands for, if this object gave it out and still holds it.
  [[nodiscard]] std::optional<std::string> name_for(const IpAddress& address);

  [[nodiscard]] std::size_t size() const noexcept { return by_name_.size(); }

  // Whether `address` is in one of the two ranges (given out or not).
  [[nodiscard]] static bool in_range(const IpAddress& address) noexcept;

 private:
  struct Entry {
    std::string name;
    std::uint32_t index;
  };
  using Order = std::list<Entry>;  // most recently used first

  [[nodiscard]] static IpAddress address_of(std::uint32_t index, IpAddress::Family family);
  [[nodiscard]] static std::optional<std::uint32_t> index_of(const IpAddress& address) noexcept;
  void touch(Order::iterator entry);

  std::size_t max_names_;
  Order order_;
  std::unordered_map<std::string, Order::iterator> by_name_;
  std::vector<Order::iterator> by_index_;  // index -> entry, for indices below next_index_; end() when free
  std::uint32_t next_index_ = 1;           // 0 (198.18.0.0, a network address) is never given out
};

}  // namespace boxproxy
