// SPDX-License-Identifier: Apache-2.0
// The host's own interface addresses, for the this-host rule (SPEC §5 step 4).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/event_owners.h"
#include "table/address.h"

namespace boxproxy {

// Every address on every interface now (getifaddrs). Empty when they cannot be read; then
// `error`, when given, is set to errno (else to 0).
[[nodiscard]] std::vector<IpAddress> read_local_addresses(int* error = nullptr);

// The index of the interface named `name` (an IPv6 zone: "fe80::1%eth0"), 0 when none has that
// name or the interfaces cannot be read.
//
// Read over netlink (RTM_GETLINK, through if_nameindex(3)), not with if_nametoindex(3): glibc's
// if_nametoindex is an ioctl (SIOCGIFINDEX) on a socket made for it, which serve's confinement
// refuses (socketd/confine_filter.cc allows FIONBIO and FIONREAD only). The netlink route socket
// and its calls are already on serve's list for getifaddrs(3) (the this-host rule), so this adds
// no system call, no ioctl request and no socket kind to what a bug in serve could use. A dump of
// every link is dearer than one ioctl, but only a dial to a zone pays it.
[[nodiscard]] std::uint32_t interface_index(const std::string& name);

// The addresses as they are at the moment of each decision, without a netlink dump every time.
//
// The spec reads them fresh for each decision: an address added after start is still this host.
// A getifaddrs() is a dozen system calls; instead a netlink socket subscribed to address changes
// is checked (one non-blocking recv) at each decision, and the list is read again only when the
// kernel reported a change. The kernel queues the notification before the change's system call
// returns, so a change made before a decision is always seen by it. Without netlink (a seccomp
// filter, an old kernel), every decision reads the list afresh.
class LocalAddresses {
 public:
  LocalAddresses();
  [[nodiscard]] const std::vector<IpAddress>& current();

 private:
  [[nodiscard]] bool changed_since_last_read() noexcept;

  UniqueFd netlink_;
  std::vector<IpAddress> addresses_;
  bool fresh_ = false;
};

}  // namespace boxproxy
