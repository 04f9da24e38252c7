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

#include "socketd/message_text.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

constexpr int kAllowed = 0;
constexpr int kRefused = 1;
constexpr int kUsage = 2;

constexpr std::string_view kUsageText =
    "Usage: boxproxy check [OPTION]... TARGET...\n"
    "Say what the rule makes of each TARGET (an address, a name, host:port or [v6]:port; a bare\n"
    "one is judged with port 443), exactly as serve would, without dialling anything.\n"
    "Prints one line per address judged: TARGET<tab>ADDRESS or -<tab>ok or the class.\n"
    "\n"
    "  --permit CIDR                 let a range through although the table refuses it\n"
    "  --deny CIDR                   refuse a range (class denied), before --permit and the table\n"
    "  --resolve NAME=ADDR[,ADDR]... fixed answers for NAME instead of DNS\n"
    "  --allow LIST                  turn on the host list: names separated by commas or spaces\n"
    "  --help                        print this and exit\n"
    "\n"
    "Options may repeat. Exit status: 0 every target allowed, 1 any refused, 2 a usage error.\n";

// A usage error: the message names the option and the value.
struct UsageError {
  std::string message;
};

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

void add_cidr(std::vector<Cidr>& ranges, std::string_view option, std::string_view value) {
  auto parsed = parse_cidr(value);
  if (auto* error = std::get_if<std::string>(&parsed)) throw UsageError{fmt::format("{}: {}", option, *error)};
  ranges.push_back(std::get<Cidr>(parsed));
}

void add_resolve(Policy& policy, std::string_view value) {
  auto parsed = parse_resolve_entry(value);
  if (auto* error = std::get_if<std::string>(&parsed)) throw UsageError{fmt::format("--resolve: {}", *error)};
  auto& entry = std::get<ResolveEntry>(parsed);
  // A repeated name adds its answers, as a repeated option does everywhere else.
  auto& answers = policy.fixed_answers[entry.name];
  answers.insert(answers.end(), entry.addresses.begin(), entry.addresses.end());
}

void add_allow(Policy& policy, std::string_view value) {
  if (!policy.allow) policy.allow.emplace();
  for (const std::string_view item : split_host_items(value)) {
    if (auto error = policy.allow->add(item)) throw UsageError{fmt::format("--allow: {}", *error)};
  }
}

struct Options {
  Policy policy;
  std::vector<std::string_view> targets;
  bool help = false;
};

Options parse_options(int argc, char** argv) {
  Options options;
  int i = 0;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg.substr(0, 2) != "--") {
      if (!arg.empty() && arg.front() == '-' && arg.size() > 1) {
        throw UsageError{fmt::format("unknown option {}", quote(arg))};
      }
      break;  // the first target: every argument from here on is one
    }
    if (arg == "--help") {
      options.help = true;
      continue;
    }
    // --name VALUE or --name=VALUE.
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name != "--permit" && name != "--deny" && name != "--resolve" && name != "--allow") {
      throw UsageError{fmt::format("unknown option {}", quote(name))};
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError{fmt::format("{}: a value is required", name)};
      value = argv[++i];
    }
    if (name == "--permit") {
      add_cidr(options.policy.rule.permit, name, value);
    } else if (name == "--deny") {
      add_cidr(options.policy.rule.deny, name, value);
    } else if (name == "--resolve") {
      add_resolve(options.policy, value);
    } else {
      add_allow(options.policy, value);
    }
  }
  for (; i < argc; ++i) options.targets.emplace_back(argv[i]);
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
  } catch (const UsageError& error) {
    // The message may repeat a piece of an argument as a table/ parser quoted it, raw.
    fmt::print(stderr, "{}\n", printable_lines(fmt::format("boxproxy check: {}", error.message)));
    return kUsage;
  }
  if (options.help) {
    fmt::print("{}", kUsageText);
    return kAllowed;
  }
  if (options.targets.empty()) {
    fmt::print(stderr, "boxproxy check: no TARGET given (see boxproxy check --help)\n");
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
