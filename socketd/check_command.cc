#include "socketd/check_command.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "proxy/defaults.h"
#include "socketd/message_text.h"
#include "socketd/option_table.h"
#include "socketd/serve_options.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

constexpr int kAllowed = 0;
constexpr int kRefused = 1;
constexpr int kUsage = 2;

constexpr std::string_view kCommand = "check";

// check's options: serve's rows for the options that shape a decision (SPEC §1), so each is
// read, checked and shown exactly as serve does. The rest of serve's options change nothing a
// decision depends on and are refused here; in a --config file check reads them as serve does.
const OptionTable& check_table() {
  static const OptionTable table = [] {
    std::vector<OptionSpec> rows;
    for (const std::string_view name : kDecisionOptions) rows.push_back(serve_option_table().at(name));
    return OptionTable(std::string(kCommand), std::move(rows));
  }();
  return table;
}

std::string help_text() {
  return fmt::format(
      "Usage: boxproxy check [OPTION]... TARGET...\n"
      "Say what the rule makes of each TARGET (an address, a name, host:port or [v6]:port; a bare\n"
      "one is judged with port 443), exactly as serve would, without dialling anything.\n"
      "Prints one line per address judged: TARGET<tab>ADDRESS or -<tab>ok or the class.\n"
      "\n"
      "Options: serve's options that shape a decision, read as serve reads them (--name VALUE or\n"
      "--name=VALUE; -- ends the options, for a TARGET that starts with -):\n"
      "{}"
      "\n"
      "A --config file may hold any of serve's keys; those that shape no decision are checked and\n"
      "otherwise left alone. Exit status: 0 every target allowed, 1 any refused, 2 a usage error.\n",
      check_table().options_help());
}

// The host's own interface addresses, for the this-host rule. An interface without an address,
// or with one of another family, is skipped. When they cannot be read, the list is empty and
// only the table applies; check says so on standard error.
// `error` is set to errno when they cannot be read.
std::vector<IpAddress> read_local_addresses(int& error) {
  std::vector<IpAddress> out;
  ifaddrs* list = nullptr;
  error = 0;
  if (getifaddrs(&list) == -1) {
    error = errno;
    return out;
  }
  for (const ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    if (it->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      IpAddress a;
      std::memcpy(a.bytes.data(), &sin->sin_addr, 4);
      out.push_back(a);
    } else if (it->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      std::array<std::uint8_t, 16> bytes{};
      std::memcpy(bytes.data(), &sin6->sin6_addr, 16);
      out.push_back(IpAddress::v6(bytes));
    }
  }
  freeifaddrs(list);
  return out;
}

// A and AAAA answers for `name` from the system resolver (this is a one-shot command, so
// blocking is fine). Empty when the name does not resolve. Repeats are dropped, order kept.
std::vector<IpAddress> resolve(const std::string& name) {
  std::vector<IpAddress> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  addrinfo* result = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &result) != 0) return out;
  for (const addrinfo* it = result; it != nullptr; it = it->ai_next) {
    IpAddress a;
    if (it->ai_family == AF_INET && it->ai_addrlen >= sizeof(sockaddr_in)) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ai_addr);
      std::memcpy(a.bytes.data(), &sin->sin_addr, 4);
    } else if (it->ai_family == AF_INET6 && it->ai_addrlen >= sizeof(sockaddr_in6)) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ai_addr);
      std::array<std::uint8_t, 16> bytes{};
      std::memcpy(bytes.data(), &sin6->sin6_addr, 16);
      a = IpAddress::v6(bytes);
    } else {
      continue;
    }
    bool seen = false;
    for (const IpAddress& b : out) seen = seen || b == a;
    if (!seen) out.push_back(a);
  }
  freeaddrinfo(result);
  return out;
}

// What check judges with: serve's policy and resolver settings, and the targets.
struct Options {
  Policy policy;                         // --allow, --allow-file, --permit, --deny, --resolve, --config
  std::vector<std::string> nameservers;  // --nameserver: the DNS servers serve would ask
  double dns_timeout = defaults::kDnsTimeoutSeconds;  // --dns-timeout
  std::vector<std::string> targets;
};

// Reads check's arguments. Throws UsageError (under check's name) or HelpRequested.
Options parse_options(int argc, char** argv) {
  ParsedArguments parsed = parse_arguments(check_table(), argc, argv, Operands::after_options);
  Options options;
  try {
    // serve's own reading, so the policy is exactly the one serve would build.
    ServeOptions serve = read_options_for_check(parsed.options);
    options.policy = std::move(serve.policy);
    options.nameservers = std::move(serve.nameservers);
    options.dns_timeout = serve.dns_timeout;
  } catch (const UsageError& error) {
    throw error.for_command(kCommand);
  }
  if (parsed.operands.empty()) throw usage_error(kCommand, "no TARGET given (see boxproxy check --help)");
  options.targets = std::move(parsed.operands);
  return options;
}

void print_line(std::string_view target, std::string_view address, std::string_view verdict) {
  // The target as given, but never a byte that could drive a terminal or break the line format.
  fmt::print("{}\t{}\t{}\n", printable(target), address, verdict);
}

// Judges one target (SPEC §5 steps 1-4) and prints its lines. True when it is allowed.
bool check_target(const Policy& policy, std::string_view text, const std::vector<IpAddress>& local) {
  const TargetResult parsed = parse_check_target(text);
  if (const auto* reason = std::get_if<Reason>(&parsed)) {
    print_line(text, "-", log_class(*reason));
    return false;
  }
  const Target& target = std::get<Target>(parsed);
  // The list before any lookup: a name off the list is never asked of DNS.
  if (check_host_list(policy, target)) {
    print_line(text, "-", log_class(Reason::not_listed));
    return false;
  }
  std::vector<IpAddress> answers;
  if (target.address) {
    answers.push_back(*target.address);
  } else if (const auto* fixed = fixed_answers_for(policy, target.host)) {
    answers = *fixed;
  } else {
    answers = resolve(target.host);
  }
  if (answers.empty()) {
    print_line(text, "-", log_class(Reason::name_not_resolved));
    return false;
  }
  // Every answer is judged and printed, so an operator sees which one refuses the name.
  bool allowed = true;
  for (const IpAddress& answer : answers) {
    const auto refusal = judge_address(policy.rule, answer, local);
    print_line(text, answer.to_string(), refusal ? log_class(*refusal) : "ok");
    allowed = allowed && !refusal;
  }
  return allowed;
}

}  // namespace

int run_check_command(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const HelpRequested&) {
    fmt::print("{}", help_text());
    return kAllowed;
  } catch (const UsageError& error) {
    fmt::print(stderr, "{}\n", error.message);
    return kUsage;
  }
  int error = 0;
  const std::vector<IpAddress> local = read_local_addresses(error);
  if (error != 0) {
    fmt::print(stderr, "boxproxy check: cannot read the interface addresses ({}); this-host is not checked\n",
               std::strerror(error));
  }
  bool all_allowed = true;
  for (const std::string_view target : options.targets) {
    all_allowed = check_target(options.policy, target, local) && all_allowed;
  }
  std::fflush(stdout);
  return all_allowed ? kAllowed : kRefused;
}

}  // namespace boxproxy
