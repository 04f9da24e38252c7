#include "socketd/check_command.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "proxy/event_owners.h"
#include "proxy/local_addresses.h"
#include "proxy/resolver.h"
#include "socketd/command_shell.h"
#include "socketd/message_text.h"
#include "socketd/option_table.h"
#include "socketd/serve_options.h"
#include "table/decision.h"
#include "table/policy.h"

namespace boxproxy {
namespace {

// Loop passes after the last lookup, for evdns' deferred callbacks of cancelled ones (serve's too).
constexpr int kFinishingTurns = 4;

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

// What check judges with: serve's reading of the options that shape a decision (its policy,
// --nameserver and --dns-timeout), and the targets.
struct Options {
  ServeOptions serve;
  std::vector<std::string> targets;
};

// Reads check's arguments. Throws UsageError (under check's name) or HelpRequested.
Options parse_options(int argc, char** argv) {
  ParsedArguments parsed = parse_arguments(check_table(), argc, argv, Operands::after_options);
  Options options;
  try {
    // serve's own reading, so the policy is exactly the one serve would build.
    options.serve = read_options_for_check(parsed.options);
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

class Checker;

// One TARGET: parsed (step 1), then driven through the decision (table/decision.h) that serve's
// connections drive, with every answer judged so that each gets its line.
struct Judgement {
  std::string_view text;
  std::optional<Reason> invalid;  // step 1: the target did not parse
  Target target;
  Decision decision{Decision::Detail::every_answer};
  Decision::Step step = Decision::Step::refuse;
  Resolver::Lookup* lookup = nullptr;  // while its lookup is pending
  Checker* checker = nullptr;
};

// Judges every target as serve would (SPEC §13): the same decision, the same resolver on evdns
// (--nameserver, --dns-timeout, no search list), the same interface addresses. The lookups of
// all targets run at once on one event loop, each bounded by --dns-timeout as a connection's is;
// the lines come out in the order the targets were given.
class Checker {
 public:
  explicit Checker(const Options& options) : options_(options), judgements_(options.targets.size()) {}
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  // Judges, prints, and returns the exit code. Throws std::runtime_error when the resolver
  // cannot be set up.
  int run() {
    for (std::size_t i = 0; i < judgements_.size(); ++i) {
      Judgement& j = judgements_[i];
      j.text = options_.targets[i];
      j.checker = this;
      TargetResult parsed = parse_check_target(j.text);
      if (const auto* reason = std::get_if<Reason>(&parsed)) {
        j.invalid = *reason;
        continue;
      }
      j.target = std::get<Target>(std::move(parsed));
      follow(j, j.decision.start(options_.serve.proxy.policy, j.target));
    }
    if (pending_ > 0) wait_for_lookups();
    if (failed_) throw std::runtime_error("cannot judge every target");
    bool all_allowed = true;
    for (const Judgement& j : judgements_) all_allowed = print(j) && all_allowed;
    std::fflush(stdout);
    return as_status(all_allowed ? ExitCode::ok : ExitCode::refused);
  }

 private:
  // Gets the decision what it asks for, as serve's connection does, until it has decided or
  // waits on its lookup.
  void follow(Judgement& j, Decision::Step step) {
    for (;;) {
      switch (step) {
        case Decision::Step::need_lookup: {
          std::optional<std::vector<IpAddress>> immediate;
          j.lookup = resolver().start(j.target.host, &on_resolved, &j, immediate);
          if (immediate) {
            step = j.decision.answers_found(std::move(*immediate));
            continue;
          }
          ++pending_;
          return;
        }
        case Decision::Step::need_local_addresses:
          step = j.decision.local_addresses_read(local_addresses());
          continue;
        case Decision::Step::ask:  // check never asks (it starts decisions with asking off)
          step = j.decision.asked(false, j.target);
          continue;
        case Decision::Step::refuse:
        case Decision::Step::dial:
          j.step = step;
          return;
      }
    }
  }

  // Runs the loop until every lookup has answered or --dns-timeout has passed since they began
  // (they all began at once, so this is each lookup's own bound).
  void wait_for_lookups() {
    timeout_ = make_event(base_.get(), -1, 0, &on_timeout, this);
    const timeval bound = to_timeval(options_.serve.proxy.dns_timeout);
    if (!timeout_ || event_add(timeout_.get(), &bound) == -1) throw std::runtime_error("cannot set the DNS time-out");
    event_base_dispatch(base_.get());
    // A cancelled lookup's token is freed by evdns' deferred callback (EVUTIL_EAI_CANCEL), which
    // runs in a loop pass: a few that do not wait, as serve does at exit.
    for (int turn = 0; turn < kFinishingTurns; ++turn) {
      if (event_base_get_num_events(base_.get(), EVENT_BASE_COUNT_ACTIVE) == 0) break;
      event_base_loop(base_.get(), EVLOOP_NONBLOCK);
    }
  }

  static void on_resolved(void* owner, std::vector<IpAddress> answers) noexcept {
    auto* j = static_cast<Judgement*>(owner);
    Checker& checker = *j->checker;
    j->lookup = nullptr;
    --checker.pending_;
    try {
      checker.follow(*j, j->decision.answers_found(std::move(answers)));
    } catch (...) {
      checker.failed_ = true;  // never an exception through libevent
    }
    if (checker.pending_ == 0) event_base_loopbreak(checker.base_.get());
  }

  static void on_timeout(evutil_socket_t, short, void* self) noexcept {
    auto& checker = *static_cast<Checker*>(self);
    for (Judgement& j : checker.judgements_) {
      if (j.lookup == nullptr) continue;
      Resolver::cancel(j.lookup);
      j.lookup = nullptr;
      // No answer in time: name not resolved, as serve's connection timer says.
      try {
        checker.follow(j, j.decision.answers_found({}));
      } catch (...) {
        checker.failed_ = true;
      }
    }
    checker.pending_ = 0;
    event_base_loopbreak(checker.base_.get());
  }

  // The resolver, set up on the first lookup: a check of addresses alone reads no resolv.conf.
  Resolver& resolver() {
    if (!resolver_) {
      base_.reset(event_base_new());
      if (!base_) throw std::runtime_error("cannot create the event loop");
      resolver_ = std::make_unique<Resolver>(base_.get(), options_.serve.nameservers, options_.serve.proxy.dns_timeout);
    }
    return *resolver_;
  }

  // The host's own addresses, read once on first need: check is over in a moment.
  const std::vector<IpAddress>& local_addresses() {
    if (!local_) {
      int error = 0;
      local_ = read_local_addresses(&error);
      if (error != 0) {
        fmt::print(stderr, "boxproxy check: cannot read the interface addresses ({}); this-host is not checked\n",
                   std::strerror(error));
      }
    }
    return *local_;
  }

  // Prints the target's lines; true when it is allowed.
  static bool print(const Judgement& j) {
    if (j.invalid) {
      print_line(j.text, "-", log_class(*j.invalid));
      return false;
    }
    // Refused before any address was judged: not-listed, name not resolved.
    if (j.step == Decision::Step::refuse && j.decision.refused_address() == nullptr) {
      print_line(j.text, "-", log_class(j.decision.reason()));
      return false;
    }
    // Every answer is printed with its own verdict, so an operator sees which one refuses a name.
    const auto answers = j.decision.answers();
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const std::optional<Reason> verdict = j.decision.verdict(i);
      print_line(j.text, answers[i].to_string(), verdict ? log_class(*verdict) : "ok");
    }
    return j.step == Decision::Step::dial;
  }

  const Options& options_;
  std::vector<Judgement> judgements_;  // sized once: lookups hold pointers to its elements
  std::optional<std::vector<IpAddress>> local_;
  // In dependency order (STYLE 2): the loop, then the resolver on it, then its timer.
  EventBasePtr base_;
  std::unique_ptr<Resolver> resolver_;
  EventPtr timeout_;
  std::size_t pending_ = 0;  // lookups not yet answered
  bool failed_ = false;
};

}  // namespace

int run_check_command(int argc, char** argv) {
  return run_command_shell(kCommand, &help_text, [argc, argv] {
    const Options options = parse_options(argc, argv);
    try {
      return Checker(options).run();
    } catch (const std::runtime_error& error) {
      throw StartupError{ExitCode::usage, error.what()};
    }
  });
}

}  // namespace boxproxy
