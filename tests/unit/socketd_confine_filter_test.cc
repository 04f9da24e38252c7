// SPDX-License-Identifier: Apache-2.0
// The seccomp programs boxproxy loads (socketd/confine_filter_program.h): each one the binary
// embeds is, byte for byte, what socketd/confine_filter.cc's rules make with libseccomp now. A
// generated file that is stale, or that the generator wrote wrong, fails here.
#include <doctest/doctest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
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
  // Each set of lifts takes rules out of the box's program.
  const ConfineFilter boxes[] = {ConfineFilter::box, ConfineFilter::box_unix_sockets,
                                 ConfineFilter::box_nested_namespaces,
                                 ConfineFilter::box_unix_sockets_nested_namespaces};
  for (const ConfineFilter a : boxes) {
    for (const ConfineFilter b : boxes) {
      if (a != b) CHECK_FALSE(same(boxproxy::confine_program(a), boxproxy::confine_program(b)));
    }
  }
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

// ---------------------------------------------------------------------------------------------
// What the box's programs decide (SPEC §14), call by call: each embedded program is run here on
// the seccomp_data the kernel would give it, by a small interpreter of the classic BPF that
// libseccomp emits, so that a rule that stops holding (or holds too much) fails by name.
namespace {

// A seccomp_data: the call's number, its ABI, and six arguments.
struct Call {
  std::uint32_t arch;
  int nr;
  std::array<std::uint64_t, 6> args;
};

// The program's answer (SECCOMP_RET_*), or nullopt for an instruction this interpreter does not
// know (the test then fails: teach it, never skip it).
std::optional<std::uint32_t> run_program(std::span<const sock_filter> program, const Call& call) {
  seccomp_data data{};
  data.nr = call.nr;
  data.arch = call.arch;
  for (std::size_t i = 0; i < call.args.size(); ++i) data.args[i] = call.args[i];
  unsigned char bytes[sizeof data];
  std::memcpy(bytes, &data, sizeof data);
  std::uint32_t a = 0;
  std::uint32_t memory[BPF_MEMWORDS] = {};
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& op = program[pc];
    switch (op.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (op.k + 4 > sizeof bytes) return std::nullopt;
        std::memcpy(&a, bytes + op.k, 4);
        break;
      case BPF_LD | BPF_MEM:
        a = memory[op.k % BPF_MEMWORDS];
        break;
      case BPF_ST:
        memory[op.k % BPF_MEMWORDS] = a;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        a &= op.k;
        break;
      case BPF_JMP | BPF_JA:
        pc += op.k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += a == op.k ? op.jt : op.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        pc += a > op.k ? op.jt : op.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += a >= op.k ? op.jt : op.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += (a & op.k) != 0 ? op.jt : op.jf;
        break;
      case BPF_RET | BPF_K:
        return op.k;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;  // fell off the end: the kernel refuses such a program
}

constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr std::uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;
constexpr std::uint64_t kHighBit = 0x100000000ULL;  // a bit the kernel ignores in an int

#if defined(__x86_64__)
constexpr std::uint32_t kNative = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNative = AUDIT_ARCH_AARCH64;
#endif

Call native(int nr, std::array<std::uint64_t, 6> args = {}) { return Call{kNative, nr, args}; }

struct BoxCase {
  const char* what;
  Call call;
  std::uint32_t box;                // with no lift
  std::uint32_t unix_sockets;       // with --allow-unix-sockets
  std::uint32_t nested_namespaces;  // with --allow-nested-namespaces
};

std::vector<BoxCase> native_cases() {
  const auto u = [](long v) { return static_cast<std::uint64_t>(v); };
  const std::uint64_t flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
  return {
      {"socket(AF_INET)", native(__NR_socket, {AF_INET, SOCK_STREAM}), kAllow, kAllow, kAllow},
      {"socket(AF_INET6, SOCK_DGRAM|flags)", native(__NR_socket, {AF_INET6, SOCK_DGRAM | flags}), kAllow, kAllow,
       kAllow},
      {"socket(AF_NETLINK, NETLINK_ROUTE)", native(__NR_socket, {AF_NETLINK, SOCK_RAW, NETLINK_ROUTE}), kAllow, kAllow,
       kAllow},
      {"socket(AF_NETLINK, NETLINK_NETFILTER)", native(__NR_socket, {AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER}), kEperm,
       kEperm, kEperm},
      {"socket(AF_NETLINK, high bits in the protocol)", native(__NR_socket, {AF_NETLINK, SOCK_RAW, kHighBit}), kEperm,
       kEperm, kEperm},
      {"socket(AF_UNIX)", native(__NR_socket, {AF_UNIX, SOCK_STREAM}), kEperm, kAllow, kEperm},
      {"socket(AF_UNIX, high bits)", native(__NR_socket, {kHighBit | AF_UNIX, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"socket(AF_INET, high bits): fails closed", native(__NR_socket, {kHighBit | AF_INET, SOCK_STREAM}), kEperm,
       kEperm, kEperm},
      {"socket(AF_UNSPEC)", native(__NR_socket, {AF_UNSPEC, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"socket(AF_PACKET)", native(__NR_socket, {AF_PACKET, SOCK_RAW}), kEperm, kEperm, kEperm},
      {"socket(AF_VSOCK)", native(__NR_socket, {AF_VSOCK, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"socket(-1)", native(__NR_socket, {u(-1), SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"socketpair(AF_UNIX, SOCK_STREAM|flags)", native(__NR_socketpair, {AF_UNIX, SOCK_STREAM | flags}), kAllow,
       kAllow, kAllow},
      {"socketpair(AF_UNIX, SOCK_SEQPACKET)", native(__NR_socketpair, {AF_UNIX, SOCK_SEQPACKET}), kAllow, kAllow,
       kAllow},
      {"socketpair(AF_UNIX, SOCK_DGRAM)", native(__NR_socketpair, {AF_UNIX, SOCK_DGRAM}), kEperm, kAllow, kEperm},
      {"socketpair(AF_UNIX, SOCK_DGRAM|flags)", native(__NR_socketpair, {AF_UNIX, SOCK_DGRAM | flags}), kEperm, kAllow,
       kEperm},
      {"socketpair(AF_UNIX, SOCK_DGRAM, high bits)", native(__NR_socketpair, {AF_UNIX, kHighBit | SOCK_DGRAM}), kEperm,
       kAllow, kEperm},
      {"socketpair(AF_UNIX, SOCK_RAW)", native(__NR_socketpair, {AF_UNIX, SOCK_RAW}), kEperm, kAllow, kEperm},
      {"socketpair(AF_TIPC)", native(__NR_socketpair, {AF_TIPC, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"unshare(CLONE_NEWUSER)", native(__NR_unshare, {CLONE_NEWUSER}), kEperm, kEperm, kAllow},
      {"unshare(CLONE_NEWNET|CLONE_FS)", native(__NR_unshare, {CLONE_NEWNET | CLONE_FS}), kEperm, kEperm, kAllow},
      {"unshare(CLONE_NEWTIME)", native(__NR_unshare, {CLONE_NEWTIME}), kEperm, kEperm, kAllow},
      {"unshare(CLONE_FS)", native(__NR_unshare, {CLONE_FS}), kAllow, kAllow, kAllow},
      {"clone(fork's flags)", native(__NR_clone, {CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD}), kAllow, kAllow,
       kAllow},
      {"clone(CLONE_NEWPID)", native(__NR_clone, {CLONE_NEWPID | SIGCHLD}), kEperm, kEperm, kAllow},
      {"clone3", native(__NR_clone3), kEnosys, kEnosys, kAllow},
      {"setns", native(__NR_setns, {3, CLONE_NEWNET}), kEperm, kEperm, kAllow},
      {"io_uring_setup", native(__NR_io_uring_setup), kEperm, kEperm, kEperm},
      {"userfaultfd", native(__NR_userfaultfd), kEperm, kEperm, kEperm},
      {"bpf", native(__NR_bpf), kEperm, kEperm, kEperm},
      {"perf_event_open", native(__NR_perf_event_open), kEperm, kEperm, kEperm},
      {"keyctl", native(__NR_keyctl), kEperm, kEperm, kEperm},
      {"add_key", native(__NR_add_key), kEperm, kEperm, kEperm},
      {"request_key", native(__NR_request_key), kEperm, kEperm, kEperm},
      {"ioctl(TIOCSTI)", native(__NR_ioctl, {0, TIOCSTI}), kEperm, kEperm, kEperm},
      {"ioctl(FIONREAD)", native(__NR_ioctl, {0, FIONREAD}), kAllow, kAllow, kAllow},
      {"read", native(__NR_read), kAllow, kAllow, kAllow},
  };
}

#if defined(__x86_64__)
// The other ABIs of x86_64: i386 (its own numbers, and socketcall) and x32 (x86_64's numbers with
// bit 30 set).
std::vector<BoxCase> other_abi_cases() {
  const auto i386 = [](int nr, std::array<std::uint64_t, 6> args) { return Call{AUDIT_ARCH_I386, nr, args}; };
  const auto x32 = [](int nr, std::array<std::uint64_t, 6> args) {
    return Call{AUDIT_ARCH_X86_64, nr | 0x40000000, args};
  };
  constexpr int kSocket = 359, kSocketpair = 360, kSocketcall = 102, kUnshare = 310, kClone3 = 435;
  return {
      {"i386 socket(AF_INET)", i386(kSocket, {AF_INET, SOCK_STREAM}), kAllow, kAllow, kAllow},
      {"i386 socket(AF_VSOCK)", i386(kSocket, {AF_VSOCK, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"i386 socket(AF_UNIX)", i386(kSocket, {AF_UNIX, SOCK_STREAM}), kEperm, kAllow, kEperm},
      {"i386 socketpair(AF_UNIX, SOCK_STREAM)", i386(kSocketpair, {AF_UNIX, SOCK_STREAM}), kAllow, kAllow, kAllow},
      {"i386 socketpair(AF_UNIX, SOCK_DGRAM)", i386(kSocketpair, {AF_UNIX, SOCK_DGRAM}), kEperm, kAllow, kEperm},
      {"i386 socketcall(SYS_SOCKET): fails closed", i386(kSocketcall, {1}), kEperm, kEperm, kEperm},
      {"i386 socketcall(SYS_SOCKETPAIR): fails closed", i386(kSocketcall, {8}), kEperm, kEperm, kEperm},
      {"i386 socketcall(SYS_CONNECT)", i386(kSocketcall, {3}), kAllow, kAllow, kAllow},
      {"i386 unshare(CLONE_NEWUSER)", i386(kUnshare, {CLONE_NEWUSER}), kEperm, kEperm, kAllow},
      {"i386 clone3", i386(kClone3, {}), kEnosys, kEnosys, kAllow},
      {"x32 socket(AF_VSOCK)", x32(__NR_socket, {AF_VSOCK, SOCK_STREAM}), kEperm, kEperm, kEperm},
      {"x32 socket(AF_INET)", x32(__NR_socket, {AF_INET, SOCK_STREAM}), kAllow, kAllow, kAllow},
      {"x32 socketpair(AF_UNIX, SOCK_DGRAM)", x32(__NR_socketpair, {AF_UNIX, SOCK_DGRAM}), kEperm, kAllow, kEperm},
      {"x32 unshare(CLONE_NEWNET)", x32(__NR_unshare, {CLONE_NEWNET}), kEperm, kEperm, kAllow},
      {"an ABI the filter does not name", Call{AUDIT_ARCH_ARM, __NR_read, {}}, SECCOMP_RET_KILL_PROCESS,
       SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_PROCESS},
  };
}
#endif

void check_box_cases(const std::vector<BoxCase>& cases) {
  using boxproxy::BoxLifts;
  for (const BoxCase& c : cases) {
    CAPTURE(c.what);
    const std::pair<BoxLifts, std::uint32_t> expected[] = {
        {BoxLifts{}, c.box},
        {BoxLifts{.unix_sockets = true}, c.unix_sockets},
        {BoxLifts{.nested_namespaces = true}, c.nested_namespaces},
        // both lifts: what each allows is allowed
        {BoxLifts{.unix_sockets = true, .nested_namespaces = true},
         c.unix_sockets == kAllow || c.nested_namespaces == kAllow ? kAllow : c.box},
    };
    for (const auto& [lifts, action] : expected) {
      CAPTURE(boxproxy::confine_filter_name(boxproxy::box_filter(lifts)));
      CHECK(run_program(boxproxy::confine_program(boxproxy::box_filter(lifts)), c.call) == action);
    }
  }
}

}  // namespace

TEST_CASE("the box's programs refuse what SPEC §14 refuses, on every ABI") {
  check_box_cases(native_cases());
#if defined(__x86_64__)
  check_box_cases(other_abi_cases());
#endif
}

TEST_CASE("each set of lifts has a box program of its own") {
  using boxproxy::BoxLifts;
  for (const ConfineFilter filter : boxproxy::kConfineFilters) {
    CAPTURE(boxproxy::confine_filter_name(filter));
    const std::optional<BoxLifts> lifts = boxproxy::box_lifts(filter);
    const bool is_box = filter != ConfineFilter::serve && filter != ConfineFilter::serve_rereading &&
                        filter != ConfineFilter::bridge && filter != ConfineFilter::inspector;
    REQUIRE(lifts.has_value() == is_box);
    if (lifts) CHECK(boxproxy::box_filter(*lifts) == filter);
  }
}

// ---------------------------------------------------------------------------------------------
// The request inspector's program (boxproxy-inspect, SPEC §18): the sockets serve hands it, and
// nothing that would reach anything else.
namespace {

#if defined(__x86_64__) || defined(__aarch64__)
constexpr std::uint32_t kRefused = SECCOMP_RET_TRAP;  // the SIGSYS handler logs it, then EPERM
#else
constexpr std::uint32_t kRefused = kEperm;
#endif

struct InspectorCase {
  const char* what;
  Call call;
  std::uint32_t action;
};

std::vector<InspectorCase> inspector_cases() {
  std::vector<InspectorCase> cases = {
      // Never: a socket of any kind, a dial, a listening socket, a way in.
      {"socket(AF_INET)", native(__NR_socket, {AF_INET, SOCK_STREAM}), kRefused},
      {"socket(AF_UNIX)", native(__NR_socket, {AF_UNIX, SOCK_STREAM}), kRefused},
      {"socket(AF_PACKET)", native(__NR_socket, {AF_PACKET, SOCK_RAW}), kRefused},
      {"socketpair", native(__NR_socketpair, {AF_UNIX, SOCK_STREAM}), kRefused},
      {"connect", native(__NR_connect, {5}), kRefused},
      {"bind", native(__NR_bind, {5}), kRefused},
      {"listen", native(__NR_listen, {5}), kRefused},
      {"accept4", native(__NR_accept4, {5}), kRefused},
      {"sendto", native(__NR_sendto, {5}), kRefused},
      {"execve", native(__NR_execve), kRefused},
      {"execveat", native(__NR_execveat), kRefused},
      {"fork", native(__NR_fork), kRefused},
      {"vfork", native(__NR_vfork), kRefused},
      {"unlink", native(__NR_unlink), kRefused},
      // Its work: serve's channel (SCM_RIGHTS), the sockets, the loop, memory, randomness, time.
      {"recvmsg", native(__NR_recvmsg, {3}), kAllow},
      {"sendmsg", native(__NR_sendmsg, {3}), kAllow},
      {"recvfrom (recv with MSG_PEEK)", native(__NR_recvfrom, {5}), kAllow},
      {"read", native(__NR_read), kAllow},
      {"write", native(__NR_write), kAllow},
      {"close", native(__NR_close), kAllow},
      {"epoll_wait", native(__NR_epoll_wait), kAllow},
      {"epoll_ctl", native(__NR_epoll_ctl), kAllow},
      {"getrandom", native(__NR_getrandom), kAllow},
      {"futex", native(__NR_futex), kAllow},
      {"brk", native(__NR_brk), kAllow},
      {"mmap(PROT_READ|PROT_WRITE)", native(__NR_mmap, {0, 4096, PROT_READ | PROT_WRITE}), kAllow},
      {"ioctl(FIONREAD)", native(__NR_ioctl, {0, FIONREAD}), kAllow},
      {"exit_group", native(__NR_exit_group), kAllow},
  };
#if !defined(BOXPROXY_SANITIZE_BUILD)
  // The sanitizer runtime does these itself (LeakSanitizer's tracer clones, ptraces, reads /proc;
  // it calls ioctl and open): that build allows them, as serve's does.
  const std::vector<InspectorCase> release_only = {
      {"ioctl(TIOCSTI)", native(__NR_ioctl, {0, TIOCSTI}), kRefused},
#if defined(__x86_64__)
      {"open", native(__NR_open), kRefused},
#endif
      {"openat", native(__NR_openat, {0, 0, 0}), kRefused},
      {"clone", native(__NR_clone, {SIGCHLD}), kRefused},
      {"ptrace", native(__NR_ptrace), kRefused},
      {"mmap(PROT_EXEC)", native(__NR_mmap, {0, 4096, PROT_READ | PROT_EXEC}), kRefused},
      {"mprotect(PROT_EXEC)", native(__NR_mprotect, {0, 4096, PROT_READ | PROT_EXEC}), kRefused},
  };
  cases.insert(cases.end(), release_only.begin(), release_only.end());
#endif
#if defined(__x86_64__)
  // Another ABI: the whole process ends.
  cases.push_back({"i386 read", Call{AUDIT_ARCH_I386, 3, {}}, SECCOMP_RET_KILL_PROCESS});
#endif
  return cases;
}

}  // namespace

TEST_CASE("the inspector's program allows its work and nothing that reaches elsewhere") {
  const auto program = boxproxy::confine_program(ConfineFilter::inspector);
  for (const InspectorCase& c : inspector_cases()) {
    const std::string what = c.what;  // by value: doctest prints a char pointer as an address
    CAPTURE(what);
    CHECK(run_program(program, c.call) == c.action);
  }
  // Not serve's, not the bridge's: both of theirs dial.
  CHECK_FALSE(same(program, boxproxy::confine_program(ConfineFilter::serve)));
  CHECK_FALSE(same(program, boxproxy::confine_program(ConfineFilter::bridge)));
}
