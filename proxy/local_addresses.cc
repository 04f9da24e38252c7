// SPDX-License-Identifier: Apache-2.0
#include "proxy/local_addresses.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>

namespace boxproxy {

std::vector<IpAddress> read_local_addresses(int* error) {
  std::vector<IpAddress> out;
  ifaddrs* list = nullptr;
  if (error != nullptr) *error = 0;
  if (::getifaddrs(&list) == -1) {
    if (error != nullptr) *error = errno;
    return out;
  }
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    // An interface without an address, or with one of another family (AF_PACKET), is skipped.
    if (it->ifa_addr == nullptr) continue;
    if (auto found = IpAddress::from_sockaddr(*it->ifa_addr)) out.push_back(std::move(found->address));
  }
  ::freeifaddrs(list);
  return out;
}

std::uint32_t interface_index(const std::string& name) {
  struct if_nameindex* list = ::if_nameindex();
  if (list == nullptr) return 0;
  std::uint32_t index = 0;
  for (const struct if_nameindex* it = list; it->if_index != 0; ++it) {  // ends with {0, NULL}
    if (it->if_name != nullptr && name == it->if_name) {
      index = it->if_index;
      break;
    }
  }
  ::if_freenameindex(list);
  return index;
}

LocalAddresses::LocalAddresses() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd == -1) return;
  UniqueFd owned(fd);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  local.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&local), sizeof local) == -1) return;
  netlink_ = std::move(owned);
}

bool LocalAddresses::changed_since_last_read() noexcept {
  if (!netlink_.valid()) return true;  // no notifications: every decision reads afresh
  bool changed = false;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::recv(netlink_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) {
      changed = true;  // any address message: read the list again
      continue;
    }
    if (n == -1 && errno == EINTR) continue;
    // ENOBUFS: notifications were lost while the queue overflowed; assume a change.
    if (n == -1 && errno == ENOBUFS) changed = true;
    return changed;
  }
}

const std::vector<IpAddress>& LocalAddresses::current() {
  if (changed_since_last_read() || !fresh_) {
    addresses_ = read_local_addresses();
    fresh_ = true;
  }
  return addresses_;
}

}  // namespace boxproxy
