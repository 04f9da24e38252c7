// SPDX-License-Identifier: Apache-2.0
#include "socketd/box_capture.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <fmt/format.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proxy/unique_fd.h"

namespace boxproxy {
namespace {

constexpr const char* kLibrary = "libnftables.so.1";
constexpr const char* kPackageHint = "install Debian's libnftables1 (apt-get install libnftables1)";

// The four calls of libnftables that capture needs, found with dlsym in the loaded library.
struct NftLibrary {
  void* handle = nullptr;
  decltype(&nft_ctx_new) ctx_new = nullptr;
  decltype(&nft_ctx_free) ctx_free = nullptr;
  decltype(&nft_ctx_buffer_error) buffer_error = nullptr;
  decltype(&nft_ctx_get_error_buffer) error_buffer = nullptr;
  decltype(&nft_run_cmd_from_buffer) run = nullptr;
};

// Loads libnftables once for the process (a box programs its rules once); on failure the reason.
std::optional<std::string> load_nftables(NftLibrary& nft) {
  static NftLibrary loaded;
  static std::string failure;
  if (loaded.handle == nullptr && failure.empty()) {
    void* handle = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      failure = fmt::format("cannot load {} ({}): {}", kLibrary, why ? why : "unknown error", kPackageHint);
    } else {
      loaded.handle = handle;
      loaded.ctx_new = reinterpret_cast<decltype(loaded.ctx_new)>(::dlsym(handle, "nft_ctx_new"));
      loaded.ctx_free = reinterpret_cast<decltype(loaded.ctx_free)>(::dlsym(handle, "nft_ctx_free"));
      loaded.buffer_error = reinterpret_cast<decltype(loaded.buffer_error)>(::dlsym(handle, "nft_ctx_buffer_error"));
      loaded.error_buffer =
          reinterpret_cast<decltype(loaded.error_buffer)>(::dlsym(handle, "nft_ctx_get_error_buffer"));
      loaded.run = reinterpret_cast<decltype(loaded.run)>(::dlsym(handle, "nft_run_cmd_from_buffer"));
      if (!loaded.ctx_new || !loaded.ctx_free || !loaded.buffer_error || !loaded.error_buffer || !loaded.run) {
        failure = fmt::format("{} lacks the calls boxproxy needs (nft_ctx_new, nft_run_cmd_from_buffer)", kLibrary);
      }
    }
  }
  if (!failure.empty()) return failure;
  nft = loaded;
  return std::nullopt;
}

// Adds a default route of `family` through the loopback, from the loopback's address (`ip route
// add default dev lo src 127.0.0.1`, or ::1), by rtnetlink. Without it a connect(2) to any
// address but the loopback's fails with ENETUNREACH in routing, before the nat rules could
// redirect it; without the source, an IPv4 socket would take 0.0.0.0 as its address, and the
// bridge's answers to it would be refused by the filter rules like any packet that leaves.
// `keep_existing`: a default route already there (a pod with a network) is not an error.
std::optional<std::string> add_default_route(int family, bool keep_existing) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return fmt::format("socket(AF_NETLINK): {}", std::strerror(errno));
  const unsigned loopback = ::if_nametoindex("lo");
  if (loopback == 0) return fmt::format("no loopback interface: {}", std::strerror(errno));

  struct {
    nlmsghdr header;
    rtmsg route;
    alignas(NLMSG_ALIGNTO) char attributes[RTA_SPACE(sizeof(unsigned)) + RTA_SPACE(16)];
  } request{};
  const bool v4 = family == AF_INET;
  const std::size_t source_size = v4 ? 4 : 16;
  request.header.nlmsg_len = static_cast<std::uint32_t>(NLMSG_LENGTH(sizeof(rtmsg)) + RTA_SPACE(sizeof(unsigned)) +
                                                        RTA_SPACE(source_size));
  request.header.nlmsg_type = RTM_NEWROUTE;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  request.header.nlmsg_seq = 1;
  request.route.rtm_family = static_cast<unsigned char>(family);
  request.route.rtm_dst_len = 0;  // default: every destination
  request.route.rtm_table = RT_TABLE_MAIN;
  request.route.rtm_protocol = RTPROT_BOOT;
  request.route.rtm_scope = RT_SCOPE_LINK;  // no gateway: the destination is "on" the loopback
  request.route.rtm_type = RTN_UNICAST;
  auto* oif = reinterpret_cast<rtattr*>(request.attributes);
  oif->rta_type = RTA_OIF;
  oif->rta_len = RTA_LENGTH(sizeof(unsigned));
  std::memcpy(RTA_DATA(oif), &loopback, sizeof loopback);
  auto* source = reinterpret_cast<rtattr*>(request.attributes + RTA_SPACE(sizeof(unsigned)));
  source->rta_type = RTA_PREFSRC;
  source->rta_len = static_cast<unsigned short>(RTA_LENGTH(source_size));
  const std::uint8_t v4_loopback[4] = {127, 0, 0, 1};
  const std::uint8_t v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::memcpy(RTA_DATA(source), v4 ? v4_loopback : v6_loopback, source_size);

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &request, request.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) == -1) {
    return fmt::format("rtnetlink: {}", std::strerror(errno));
  }
  alignas(nlmsghdr) char reply[4096];
  const ssize_t n = ::recv(fd.get(), reply, sizeof reply, 0);
  if (n == -1) return fmt::format("rtnetlink: {}", std::strerror(errno));
  const auto* answer = reinterpret_cast<const nlmsghdr*>(reply);
  if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr))) || answer->nlmsg_type != NLMSG_ERROR) {
    return std::string("rtnetlink: an unexpected answer");
  }
  const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(answer));
  if (error->error == -EEXIST && keep_existing) return std::nullopt;
  if (error->error != 0) return fmt::format("rtnetlink: {}", std::strerror(-error->error));
  return std::nullopt;
}

// The rules of a pod (CaptureSpec::exempt_uid set): see box_capture.h and the comments below.
std::string pod_rules(const CaptureSpec& spec, std::uint32_t uid) {
  std::string nat_direct;
  std::string filter_direct;
  if (spec.listen_port != 0) {
    // The bridge's own --listen port, dialled on loopback as HTTP_PROXY says, is not captured
    // (captured, its original destination would be the loopback, which the proxy refuses).
    nat_direct = fmt::format(
        "    ip daddr 127.0.0.1 tcp dport {0} return;\n"
        "    ip6 daddr ::1 tcp dport {0} return;\n",
        spec.listen_port);
    filter_direct = fmt::format(
        "    ip daddr 127.0.0.1 tcp dport {0} accept;\n"
        "    ip6 daddr ::1 tcp dport {0} accept;\n",
        spec.listen_port);
  }
  std::string dns_nat;
  std::string dns_filter;
  if (spec.dns_port != 0) {
    // DNS to any server, the cluster's included, goes to the bridge's responder: a name off the
    // list never leaves the pod, and the agent never learns a refused name's address.
    dns_nat = fmt::format("    meta l4proto {{ tcp, udp }} th dport 53 redirect to :{};\n", spec.dns_port);
    dns_filter = fmt::format(
        "    ip daddr 127.0.0.1 meta l4proto {{ tcp, udp }} th dport {0} accept;\n"
        "    ip6 daddr ::1 meta l4proto {{ tcp, udp }} th dport {0} accept;\n",
        spec.dns_port);
  }
  return fmt::format(
      // Created empty if missing, then deleted, then made anew, in one transaction: a second
      // capture (an init container restarted) leaves exactly one table, and there is no moment
      // without rules.
      "table inet boxproxy_capture {{}}\n"
      "delete table inet boxproxy_capture\n"
      "table inet boxproxy_capture {{\n"
      "  chain nat_output {{\n"
      "    type nat hook output priority -100; policy accept;\n"
      // The proxy's own user: serve's dials to origins and its DNS must not come back to it.
      "    meta skuid {0} return;\n"
      "{1}{2}"
      // Every other TCP connection, to any address, loopback too (the pod's loopback is shared
      // with every container: a server another container runs there is not the agent's to reach
      // but through the proxy), ends at the bridge, which asks the proxy about its destination.
      "    meta l4proto tcp redirect to :{3};\n"
      "  }}\n"
      "  chain filter_output {{\n"
      // What is not captured (other UDP, ICMP, raw IP, IPv4 and IPv6 alike) goes nowhere: dropped
      // (a sender in the pod is told EPERM), so no packet of it leaves for any address.
      "    type filter hook output priority 0; policy drop;\n"
      "    meta skuid {0} accept;\n"
      // Later packets of what was let through, and the kernel's own answers about them (RST,
      // ICMP errors, which belong to no socket); the first packet of anything never matches.
      "    ct state established,related accept;\n"
      // After nat (priority -100): the packets captured above, now bound for the bridge.
      "    ip daddr 127.0.0.1 tcp dport {3} accept;\n"
      "    ip6 daddr ::1 tcp dport {3} accept;\n"
      "{4}{5}"
      // IPv6 neighbour discovery (the kernel's, for the proxy's own traffic on the pod's link):
      // it cannot leave the link.
      "    icmpv6 type {{ nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit }} accept;\n"
      "  }}\n"
      "}}\n",
      uid, dns_nat, nat_direct, spec.transparent_port, dns_filter, filter_direct);
}

// Loads `rules` through libnftables: nullopt, or why not (after `who: `).
std::optional<std::string> load_rules(const std::string& rules, std::string_view who) {
  NftLibrary nft;
  if (auto failure = load_nftables(nft)) return fmt::format("{}: {}", who, *failure);
  nft_ctx* context = nft.ctx_new(NFT_CTX_DEFAULT);
  if (context == nullptr) return fmt::format("{}: nft_ctx_new failed", who);
  (void)nft.buffer_error(context);  // errors into a buffer, for our message, not onto stderr
  std::optional<std::string> result;
  if (nft.run(context, rules.c_str()) != 0) {
    const char* why = nft.error_buffer(context);
    result = fmt::format(
        "{}: the kernel refused the nftables rules (it needs nf_tables with nat and reject, and nf_conntrack):\n{}",
        who, why ? why : "(no reason given)");
  }
  nft.ctx_free(context);
  return result;
}

// The default routes, then the rules.
std::optional<std::string> program_capture(const CaptureSpec& spec, std::string_view who, bool keep_routes) {
  for (const int family : {AF_INET, AF_INET6}) {
    if (auto failure = add_default_route(family, keep_routes)) {
      return fmt::format("{}: cannot add the default {} route: {}", who, family == AF_INET ? "IPv4" : "IPv6",
                         *failure);
    }
  }
  return load_rules(capture_rules(spec), who);
}

}  // namespace

std::optional<std::string> mount_box_resolv_conf(std::string_view contents) {
  static constexpr const char* kTarget = "/etc/resolv.conf";
  const auto failed = [](std::string_view step) {
    return fmt::format("boxproxy run: --transparent: cannot point the box's {} at the bridge: {}: {}", kTarget, step,
                       std::strerror(errno));
  };
  UniqueFd fs(::fsopen("tmpfs", FSOPEN_CLOEXEC));
  if (!fs.valid()) return failed("fsopen(tmpfs)");
  if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "size", "16k", 0) == -1 ||
      ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) == -1) {
    return failed("fsconfig");
  }
  UniqueFd tmpfs(::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!tmpfs.valid()) return failed("fsmount");
  {
    UniqueFd file(::openat(tmpfs.get(), "resolv.conf", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644));
    if (!file.valid()) return failed("openat");
    if (::write(file.get(), contents.data(), contents.size()) != static_cast<ssize_t>(contents.size())) {
      return failed("write");
    }
  }
  UniqueFd tree(::open_tree(tmpfs.get(), "resolv.conf", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree.valid()) return failed("open_tree");
  // A /etc/resolv.conf that is a symbolic link is followed (its target is replaced, in this
  // mount namespace only); one that is missing cannot be covered.
  if (::move_mount(tree.get(), "", AT_FDCWD, kTarget, MOVE_MOUNT_F_EMPTY_PATH) == -1) return failed("move_mount");
  // Read-only: the inner user namespace then locks it so (COMMAND cannot remount it).
  if (::mount(nullptr, kTarget, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) == -1) {
    return failed("remount read-only");
  }
  return std::nullopt;
}

std::string capture_rules(std::uint16_t transparent_port, std::uint16_t dns_port) {
  return capture_rules(CaptureSpec{.transparent_port = transparent_port, .dns_port = dns_port, .exempt_uid = std::nullopt, .listen_port = 0});
}

std::string capture_rules(const CaptureSpec& spec) {
  if (spec.exempt_uid) return pod_rules(spec, *spec.exempt_uid);
  const std::uint16_t transparent_port = spec.transparent_port;
  const std::uint16_t dns_port = spec.dns_port;
  std::string dns;
  if (dns_port != 0) {
    // DNS to any server but the box's own goes to the bridge's responder: a program that asks
    // 8.8.8.8 directly gets the same answers as one that reads /etc/resolv.conf.
    dns = fmt::format(
        "    ip daddr != 127.0.0.0/8 meta l4proto {{ tcp, udp }} th dport 53 redirect to :{0};\n"
        "    ip6 daddr != ::1 meta l4proto {{ tcp, udp }} th dport 53 redirect to :{0};\n",
        dns_port);
  }
  return fmt::format(
      "table inet boxproxy_capture {{\n"
      "  chain nat_output {{\n"
      "    type nat hook output priority -100; policy accept;\n"
      "{0}"
      "    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :{1};\n"
      "    ip6 daddr != ::1 meta l4proto tcp redirect to :{1};\n"
      "  }}\n"
      "  chain filter_output {{\n"
      "    type filter hook output priority 0; policy accept;\n"
      // After nat (priority -100) a captured connection's packets carry a loopback destination;
      // whatever still names another address (other UDP, ICMP, raw IP) is refused at once.
      "    ip daddr != 127.0.0.0/8 reject with icmp type admin-prohibited;\n"
      "    ip6 daddr != ::1 reject with icmpv6 type admin-prohibited;\n"
      "  }}\n"
      "}}\n",
      dns, transparent_port);
}

std::optional<std::string> capture_available() {
  NftLibrary nft;
  if (auto failure = load_nftables(nft)) return "boxproxy run: --transparent: " + *failure;
  return std::nullopt;
}

std::optional<std::string> capture_box_traffic(std::uint16_t transparent_port, std::uint16_t dns_port) {
  return program_capture(CaptureSpec{.transparent_port = transparent_port, .dns_port = dns_port, .exempt_uid = std::nullopt, .listen_port = 0},
                         "boxproxy run: --transparent", false);
}

std::optional<std::string> capture_namespace_traffic(const CaptureSpec& spec, std::string_view who) {
  return program_capture(spec, who, true);
}

}  // namespace boxproxy
