// SPDX-License-Identifier: Apache-2.0
#include "socketd/bridge_command.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "proxy/bridge/bridge.h"
#include "proxy/decision_log.h"
#include "proxy/defaults.h"
#include "proxy/bridge/dns_responder.h"
#include "proxy/event_owners.h"
#include "proxy/bridge/proxy_socket.h"
#include "proxy/stats_line.h"
#include "socketd/command_shell.h"
#include "table/message_text.h"
#include "socketd/option_table.h"
#include "socketd/readiness.h"
#include "socketd/self_confine.h"
#include "socketd/signal_events.h"
#include "table/address.h"

namespace boxproxy {
namespace {

constexpr int kListenBacklog = 1024;
constexpr std::string_view kCommand = "bridge";

const OptionTable& bridge_table() {
  static const OptionTable table(
      std::string(kCommand),
      {
          OptionSpec{.name = "socket", .kind = OptionKind::value, .value_name = "PATH",
                     .help = "the proxy's Unix socket (boxproxy serve --socket). Required."},
          OptionSpec{.name = "listen", .kind = OptionKind::list, .value_name = "ADDR:PORT",
                     .help = "an IPv4 or [IPv6] address and port to accept on; port 0 picks a free one",
                     .default_text = fmt::format("127.0.0.1:{0}, and [::1]:{0} when the box has IPv6 loopback",
                                                 defaults::kBridgePort)},
          OptionSpec{.name = "transparent", .kind = OptionKind::list, .value_name = "ADDR:PORT",
                     .help = "also accept connections that nftables redirected here, and ask the proxy for "
                             "each one's original destination (SO_ORIGINAL_DST) over SOCKS5",
                     .default_text = "none"},
          OptionSpec{.name = "dns", .kind = OptionKind::list, .value_name = "ADDR:PORT",
                     .help = "answer DNS (A and AAAA, UDP and TCP) here, asking the proxy about each name "
                             "(SPEC 16): allowed names get an address of the bridge's own, refused ones NXDOMAIN",
                     .default_text = "none"},
          OptionSpec{.name = "die-with-parent", .kind = OptionKind::flag,
                     .help = "exit as on SIGTERM when the process that started it dies", .default_text = "off"},
          OptionSpec{.name = "no-confine", .kind = OptionKind::flag,
                     .help = "do not confine the process after setup (no seccomp filter, no Landlock): "
                             "for debugging only",
                     .default_text = "confined"},
      });
  return table;
}

std::string help_text() {
  return fmt::format(
      "usage: boxproxy bridge --socket PATH [--listen ADDR:PORT]... [--die-with-parent] [--no-confine]\n"
      "\n"
      "Inside a box: accepts TCP on ADDR:PORT and relays each connection, byte for byte, to the\n"
      "proxy's Unix socket PATH (the proxy tells SOCKS5, SOCKS4a and HTTP apart itself).\n"
      "\n"
      "{}"
      "\n"
      "Once listening it prints one line to standard output:\n"
      "  {{\"event\":\"listening\",\"socket\":PATH,\"listen\":[\"127.0.0.1:{}\",...],\"pid\":N}}\n"
      "SIGTERM or SIGINT: stop, close every connection, exit 0. SIGUSR1: a stats line on standard error.\n"
      "The socket is held from start (a proxy restarted at PATH is not followed); SIGHUP holds what\n"
      "is at PATH then.\n",
      bridge_table().options_help(), defaults::kBridgePort);
}

struct ListenAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  bool optional = false;  // the default [::1]: skipped when the box has no IPv6 loopback
};

struct BridgeOptions {
  std::string socket_path;
  std::vector<ListenAddress> listen;
  std::vector<ListenAddress> transparent;  // --transparent: listeners for redirected connections
  std::vector<ListenAddress> dns;          // --dns: the DNS responder's addresses (UDP and TCP)
  bool die_with_parent = false;
  bool confine = true;  // off with --no-confine (SPEC §17)
};

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

// ADDR:PORT with ADDR an IPv4 address in dotted form or a bracketed IPv6 address. Names are not
// taken: the bridge never asks a resolver.
std::optional<ListenAddress> parse_listen(std::string_view text) {
  const bool bracketed = text.starts_with('[');
  std::string_view host;
  std::string_view port;
  if (bracketed) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  // Strict forms only (a dotted quad, or IPv6 in brackets): an operator's address is never a guess.
  const auto address = parse_strict_address(host);
  const auto value = parse_port(port);
  if (!address || address->is_v4() == bracketed || !value) return std::nullopt;
  const SocketAddress socket_address = address->to_sockaddr(*value);
  ListenAddress out;
  out.address = socket_address.storage;
  out.length = socket_address.length;
  return out;
}

// Every ADDR:PORT given to the list option `name` (--listen, --transparent, --dns); a usage error
// (exit 2) names the first that is not one.
std::vector<ListenAddress> parse_listen_list(const RawOptions& raw, std::string_view name) {
  std::vector<ListenAddress> addresses;
  const auto given = raw.find(std::string(name));
  if (given == raw.end()) return addresses;
  for (const std::string& text : given->second.values) {
    auto address = parse_listen(text);
    if (!address) {
      fail_value(kCommand, fmt::format("--{}", name), text,
                 "is not ADDR:PORT (an IPv4 address or a [bracketed] IPv6 one, port 0-65535)");
    }
    addresses.push_back(*address);
  }
  return addresses;
}

BridgeOptions parse_bridge_options(int argc, char** argv) {
  const RawOptions raw = parse_arguments(bridge_table(), argc, argv, Operands::none).options;
  BridgeOptions options;
  const auto socket = raw.find("socket");
  if (socket == raw.end()) throw usage_error(kCommand, "--socket PATH is required");
  const std::string& path = socket->second.values.front();
  if (path.empty()) fail_value(kCommand, "--socket", path, "is not a path (it is empty)");
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    fail_value(kCommand, "--socket", path,
               fmt::format("is longer than a Unix socket path may be ({} bytes)", sizeof(sockaddr_un::sun_path) - 1));
  }
  options.socket_path = path;
  options.listen = parse_listen_list(raw, "listen");
  options.transparent = parse_listen_list(raw, "transparent");
  options.dns = parse_listen_list(raw, "dns");
  options.die_with_parent = raw.contains("die-with-parent");
  options.confine = !raw.contains("no-confine");
  if (options.listen.empty()) {
    auto v4 = parse_listen(fmt::format("127.0.0.1:{}", defaults::kBridgePort));
    auto v6 = parse_listen(fmt::format("[::1]:{}", defaults::kBridgePort));
    v6->optional = true;
    options.listen.push_back(*v4);
    options.listen.push_back(*v6);
  }
  return options;
}

std::string address_text(const sockaddr_storage& address) {
  const auto found = IpAddress::from_sockaddr(reinterpret_cast<const sockaddr&>(address));
  if (!found) return "?";
  const std::string ip = found->address.to_string();
  return found->address.is_v4() ? fmt::format("{}:{}", ip, found->port) : fmt::format("[{}]:{}", ip, found->port);
}

// A listening, non-blocking socket on `address`; -1 for an optional address the box cannot have
// (no IPv6 loopback). Throws StartupError otherwise.
int open_listener(const ListenAddress& address, std::string& bound_text) {
  const int fd = ::socket(address.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    if (address.optional) return -1;
    throw StartupError{ExitCode::failure, fmt::format("listen {}: {}", address_text(address.address), std::strerror(errno))};
  }
  UniqueFd owner(fd);
  const int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // [::1] means IPv6 only: the IPv4 side is its own --listen.
  if (address.address.ss_family == AF_INET6) (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address.address), address.length) == -1 ||
      ::listen(fd, kListenBacklog) == -1) {
    const int error = errno;
    if (address.optional && (error == EADDRNOTAVAIL || error == EAFNOSUPPORT)) return -1;
    throw StartupError{ExitCode::failure, fmt::format("listen {}: {}", address_text(address.address), std::strerror(error))};
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == -1) bound = address.address;
  bound_text = address_text(bound);
  return owner.release();
}

// The DNS responder's sockets on `address`: TCP listening there, and UDP bound to the same port.
// For port 0 the TCP socket picks it; if UDP cannot have that port too, both are tried again
// (a few times: a free TCP port is rarely a taken UDP one). Throws StartupError. Returns the
// address bound, as text.
std::string open_dns(DnsResponder& responder, const ListenAddress& address) {
  const auto port_of = [](const sockaddr_storage& a) {
    return a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                   : reinterpret_cast<const sockaddr_in&>(a).sin_port;
  };
  const bool any_port = port_of(address.address) == 0;
  for (int attempt = 0;; ++attempt) {
    std::string text;
    UniqueFd listener(open_listener(ListenAddress{address.address, address.length, false}, text));
    ListenAddress bound = address;
    socklen_t length = sizeof bound.address;
    if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound.address), &length) == -1) {
      bound.address = address.address;
    }
    UniqueFd udp(::socket(address.address.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!udp.valid()) throw StartupError{ExitCode::failure, fmt::format("--dns {}: {}", text, std::strerror(errno))};
    const int one = 1;
    if (address.address.ss_family == AF_INET6) (void)::setsockopt(udp.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(udp.get(), reinterpret_cast<const sockaddr*>(&bound.address), address.length) == -1) {
      const int error = errno;
      if (any_port && error == EADDRINUSE && attempt < 16) continue;
      throw StartupError{ExitCode::failure, fmt::format("--dns {} (UDP): {}", text, std::strerror(error))};
    }
    try {
      responder.add_udp(udp.release());
      responder.add_tcp(listener.release());
    } catch (const std::runtime_error& error) {
      throw StartupError{ExitCode::failure, fmt::format("--dns {}: {}", text, error.what())};
    }
    return text;
  }
}

// Each connection needs its two sockets and up to two splice pipes (two descriptors each): take
// whatever the hard limit allows, since the bridge has no cap of its own (the proxy's
// --max-tunnels is the cap); accept backs off on EMFILE past it.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == -1 || limit.rlim_cur >= limit.rlim_max) return;
  constexpr rlim_t kEnough = 1 << 20;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? kEnough : std::min<rlim_t>(limit.rlim_max, kEnough);
  (void)::setrlimit(RLIMIT_NOFILE, &limit);
}

// Everything a running bridge owns, in dependency order: destroyed in reverse, so the
// connections and listeners die before the event base.
struct Bridge {
  EventBasePtr base;
  // Standard error's lines (stats, libevent's own messages as JSON message lines), written
  // without ever blocking: a reader that stalls never stalls the bridge (SPEC §12).
  std::unique_ptr<DecisionLog> log;
  std::optional<LibeventLogRoute> libevent_messages;
  // The proxy's socket, pinned at start (proxy/bridge/proxy_socket.h), and the addresses the DNS
  // responder gives out: before the server and the responder that read them.
  ProxySocket proxy;
  NameAddresses names;
  std::unique_ptr<BridgeServer> server;
  std::unique_ptr<DnsResponder> dns;
  EventPtr on_term, on_int, on_usr1, on_hup;

  static void on_signal(evutil_socket_t signal, short, void* self) noexcept {
    auto* bridge = static_cast<Bridge*>(self);
    if (signal == SIGHUP) {
      bridge->repin();
      return;
    }
    if (signal == SIGUSR1) {
      const BridgeStats& s = bridge->server->stats();
      StatsLine line;
      line.number("open", s.open).number("accepted", s.accepted).number("failed", s.failed);
      line.number("captured", s.captured).number("refused", s.refused);
      // With --dns, what the responder answered: questions in all, NXDOMAIN for a refused name,
      // SERVFAIL because too many waited on the proxy.
      if (bridge->dns) {
        const auto& dns = bridge->dns->stats();
        line.numbers("dns", {{"queries", dns.queries}, {"refused", dns.refused}, {"busy", dns.busy}});
      }
      bridge->log->raw_line(line.text());
      return;
    }
    bridge->server->stop();
    event_base_loopbreak(bridge->base.get());
  }

  // SIGHUP: a restarted proxy is a new socket at the same path, which the bridge never follows by
  // itself; whoever may signal the bridge (never COMMAND in a `run` box: the bridge is outside its
  // PID namespace) asks for it on purpose. Connections already open keep the socket they have;
  // what cannot be pinned leaves the old pin in place, and says why.
  void repin() noexcept {
    const std::string why = proxy.repin();
    log->message(why.empty() ? fmt::format("sighup: --socket {}: the socket there now is held", quote(proxy.path()))
                             : fmt::format("sighup: --socket {}: {}; the socket held before stays", quote(proxy.path()),
                                           why));
  }
};

// The bridge's socket pinned, its event loop, log and server made, its signals handled. Throws
// StartupError.
void set_up(Bridge& bridge, const BridgeOptions& options) {
  // Pinned before anything from the box can reach the bridge: every client and DNS question goes
  // to this socket, never to whatever the name leads to later (proxy/bridge/proxy_socket.h). So the
  // proxy must be listening first: a missing socket is a start-up failure, not one per client.
  if (const std::string why = bridge.proxy.pin(options.socket_path); !why.empty()) {
    throw StartupError{ExitCode::failure, fmt::format("--socket {}: {}", quote(options.socket_path), why)};
  }
  event_config* cfg = event_config_new();
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);  // one thread, no locks
  bridge.base.reset(event_base_new_with_config(cfg));
  event_config_free(cfg);
  if (!bridge.base) throw StartupError{ExitCode::failure, "cannot create the event loop"};
  bridge.log = std::make_unique<DecisionLog>(bridge.base.get(), /*json=*/true, STDERR_FILENO, false, UniqueFd());
  bridge.libevent_messages.emplace(*bridge.log);
  try {
    bridge.server = std::make_unique<BridgeServer>(bridge.base.get(), bridge.proxy);
  } catch (const std::runtime_error& error) {
    throw StartupError{ExitCode::failure, error.what()};
  }
  add_signal_events(bridge.base.get(),
                    {{SIGTERM, &bridge.on_term}, {SIGINT, &bridge.on_int}, {SIGUSR1, &bridge.on_usr1},
                     {SIGHUP, &bridge.on_hup}},
                    &Bridge::on_signal, &bridge);
}

// A listener on each of `addresses`, handed to `add` (an optional address the box cannot have is
// skipped). Returns the addresses bound, as a JSON array of text. `what` names them in a
// message ("listen", "--transparent"). Throws StartupError.
nlohmann::json open_listeners(const std::vector<ListenAddress>& addresses, std::string_view what,
                              const std::function<void(int)>& add) {
  nlohmann::json bound = nlohmann::json::array();
  for (const ListenAddress& address : addresses) {
    std::string text;
    const int fd = open_listener(address, text);
    if (fd == -1) continue;
    try {
      add(fd);
    } catch (const std::runtime_error& error) {
      throw StartupError{ExitCode::failure, fmt::format("{} {}: {}", what, text, error.what())};
    }
    bound.push_back(text);
  }
  return bound;
}

int bridge(const BridgeOptions& options) {
  const pid_t parent = ::getppid();
  ::signal(SIGPIPE, SIG_IGN);
  raise_descriptor_limit();

  Bridge bridge;
  set_up(bridge, options);
  if (options.die_with_parent) die_with_parent(SIGTERM, parent);

  const nlohmann::json bound =
      open_listeners(options.listen, "listen", [&bridge](int fd) { bridge.server->add_listener(fd); });
  const nlohmann::json transparent = open_listeners(options.transparent, "--transparent", [&bridge](int fd) {
    bridge.server->add_transparent_listener(fd);
  });

  nlohmann::json dns = nlohmann::json::array();
  if (!options.dns.empty()) {
    bridge.dns = std::make_unique<DnsResponder>(bridge.base.get(), bridge.proxy, bridge.names);
    bridge.server->set_name_lookup([&names = bridge.names](const IpAddress& address) { return names.name_for(address); });
    for (const ListenAddress& address : options.dns) dns.push_back(open_dns(*bridge.dns, address));
  }

  // Confined before the first byte from the box is read, and before the line that says it
  // listens (SPEC §17).
  if (options.confine) {
    try {
      ConfineRequest request;
      request.command = ConfinedCommand::bridge;
      request.log_fd = STDERR_FILENO;
      request.json_log = true;
      for (const std::string& notice : confine_self(request)) bridge.log->message(notice);
    } catch (const ConfineError& error) {
      throw StartupError{ExitCode::failure, fmt::format("cannot confine itself: {} (--no-confine runs without)",
                                     error.what())};
    }
  }

  // serve's own writer (write(2), not stdio: readiness.h says why it must be).
  const std::string captured = (transparent.empty() ? "" : fmt::format(",\"transparent\":{}", transparent.dump())) +
                               (dns.empty() ? "" : fmt::format(",\"dns\":{}", dns.dump()));
  announce_listening(options.socket_path, fmt::format(",\"listen\":{}{}", bound.dump(), captured));

  event_base_dispatch(bridge.base.get());
  bridge.server->stop();
  return as_status(ExitCode::ok);
}

}  // namespace

int run_bridge_command(int argc, char** argv) {
  return run_command_shell(kCommand, &help_text, [argc, argv] { return bridge(parse_bridge_options(argc, argv)); });
}

}  // namespace boxproxy
