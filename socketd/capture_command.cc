// SPDX-License-Identifier: Apache-2.0
#include "socketd/capture_command.h"

#include <fmt/format.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "socketd/box_capture.h"
#include "socketd/command_shell.h"
#include "socketd/option_table.h"
#include "socketd/usage_error.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "capture";
constexpr const char* kWho = "boxproxy capture";

const OptionTable& capture_table() {
  static const OptionTable table(
      std::string(kCommand),
      {
          OptionSpec{.name = "exempt-uid", .kind = OptionKind::number, .value_name = "N",
                     .help = "the proxy's user (the sidecar's runAsUser): its sockets pass untouched; every "
                             "other user's traffic is captured or dropped. Required; not 0 (root in any "
                             "container of the pod would pass)",
                     .min = 1, .max = 4'294'967'294},
          OptionSpec{.name = "port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's --transparent port on 127.0.0.1 and [::1]: every TCP connection goes there",
                     .default_text = std::to_string(kCaptureTransparentPort), .min = 1, .max = 65535},
          OptionSpec{.name = "dns-port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's --dns port on 127.0.0.1 and [::1]: every query to port 53 (UDP and "
                             "TCP) goes there; 0 drops DNS",
                     .default_text = std::to_string(kCaptureDnsPort), .min = 0, .max = 65535},
          OptionSpec{.name = "listen-port", .kind = OptionKind::number, .value_name = "N",
                     .help = "the bridge's --listen port, reached directly on 127.0.0.1 and [::1] (HTTP_PROXY); "
                             "0 for none",
                     .default_text = "3128", .min = 0, .max = 65535},
          OptionSpec{.name = "check", .kind = OptionKind::flag,
                     .help = "print the nftables rules it would load, and load nothing", .default_text = "off"},
      });
  return table;
}

std::string help_text() {
  return fmt::format(
      "usage: boxproxy capture --exempt-uid N [--port N] [--dns-port N] [--listen-port N] [--check]\n"
      "\n"
      "For a pod's init container (it needs CAP_NET_ADMIN): in the current network namespace, sends\n"
      "every TCP connection whose socket is not the user N's to the bridge's transparent port, every\n"
      "DNS query to the bridge's DNS port, and drops everything else (other UDP, ICMP, raw IP), IPv4\n"
      "and IPv6 alike. Adds a default route through the loopback where there is none. Running it again\n"
      "replaces its table (nftables: table inet boxproxy_capture). Exits 0 once the rules are in.\n"
      "\n"
      "{}",
      capture_table().options_help());
}

std::uint16_t port_option(const RawOptions& raw, std::string_view name, std::uint16_t fallback) {
  const auto given = raw.find(name);
  if (given == raw.end()) return fallback;
  return static_cast<std::uint16_t>(number_value(kCommand, capture_table().at(name), given->second));
}

CaptureSpec parse_capture_options(int argc, char** argv, bool& check) {
  const RawOptions raw = parse_arguments(capture_table(), argc, argv, Operands::none).options;
  const auto uid = raw.find("exempt-uid");
  if (uid == raw.end()) throw usage_error(kCommand, "--exempt-uid N is required (the sidecar's user)");
  CaptureSpec spec;
  spec.exempt_uid = static_cast<std::uint32_t>(number_value(kCommand, capture_table().at("exempt-uid"), uid->second));
  spec.transparent_port = port_option(raw, "port", kCaptureTransparentPort);
  spec.dns_port = port_option(raw, "dns-port", kCaptureDnsPort);
  spec.listen_port = port_option(raw, "listen-port", 3128);
  // One port for two listeners would send DNS to the TCP relay or the other way round: the
  // operator meant something else.
  if (spec.dns_port == spec.transparent_port || spec.listen_port == spec.transparent_port ||
      (spec.listen_port != 0 && spec.listen_port == spec.dns_port)) {
    throw usage_error(kCommand, fmt::format("--port {}, --dns-port {} and --listen-port {} must differ",
                                            spec.transparent_port, spec.dns_port, spec.listen_port));
  }
  check = raw.contains("check");
  return spec;
}

// Whether this process may program the namespace: CAP_NET_ADMIN in its effective set. Asked
// first so that a pod without the capability gets a message saying so, not libnftables' words.
bool has_net_admin() {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) == -1) return false;
  return (data[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32))) != 0;
}

int capture(const CaptureSpec& spec, bool check) {
  if (check) {
    std::fputs(capture_rules(spec).c_str(), stdout);
    return as_status(ExitCode::ok);
  }
  if (!has_net_admin()) {
    throw StartupError{ExitCode::failure,
                       "needs CAP_NET_ADMIN to program the network namespace (in a pod: the init container's "
                       "securityContext.capabilities.add: [NET_ADMIN]); nothing was changed"};
  }
  if (auto failure = capture_namespace_traffic(spec, kWho)) {
    std::fprintf(stderr, "%s\n", failure->c_str());
    return as_status(ExitCode::failure);
  }
  fmt::print(stderr, "{}: the namespace's traffic goes to the bridge (TCP :{}, DNS :{}); user {} is exempt\n", kWho,
             spec.transparent_port, spec.dns_port, *spec.exempt_uid);
  return as_status(ExitCode::ok);
}

}  // namespace

int run_capture_command(int argc, char** argv) {
  return run_command_shell(kCommand, &help_text, [argc, argv] {
    bool check = false;
    const CaptureSpec spec = parse_capture_options(argc, argv, check);
    return capture(spec, check);
  });
}

}  // namespace boxproxy
