#include "proxy/local_addresses.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>

namespace boxproxy {

std::vector<IpAddress> read_local_addresses() {
  std::vector<IpAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == -1) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    if (it->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      IpAddress a;
      a.family = IpAddress::Family::v4;
      std::memcpy(a.bytes.data(), &sin->sin_addr, 4);
      out.push_back(a);
    } else if (it->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      IpAddress a;
      a.family = IpAddress::Family::v6;
      std::memcpy(a.bytes.data(), &sin6->sin6_addr, 16);
      out.push_back(a);
    }
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace boxproxy
