// SPDX-License-Identifier: Apache-2.0
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
#include "table/message_text.h"
#include "socketd/option_table.h"
#include "socketd/serve_options.h"
#include "table/check_request.h"
#include "table/decision.h"
#include "proxy/stages/scope_judgement.h"
#include "table/inspect_table.h"
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
      "A TARGET 'METHOD https://host[:port]/path' (one argument) is a request: its host is judged\n"
      "as above, then by the rules of the inspected endpoint it reaches (--inspect, \"inspect\").\n"
      "Prints one line: TARGET<tab>ENDPOINT or -<tab>RULE or -<tab>ok or the class.\n"
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
  // A request whose shape is wrong (no METHOD, not https) is the command line's mistake, said
  // before anything is judged: most often an unquoted 'GET https://...' split in two.
  for (const std::string& target : parsed.operands) {
    if (!names_request(target)) continue;
    auto request = parse_check_request(target);
    if (const auto* why = std::get_if<std::string>(&request)) {
      throw usage_error(kCommand, fmt::format("{}: {}", quote(target), *why));
    }
  }
  options.targets = std::move(parsed.operands);
  return options;
}

void print_line(std::string_view target, std::string_view address, std::string_view verdict) {
  // The target as given, but never a byte that could drive a terminal or break the line format.
  fmt::print("{}\t{}\t{}\n", printable(target), address, verdict);
}

// A request's line (SPEC §18): the endpoint and the rule that decide it.
void print_request_line(std::string_view target, std::string_view endpoint, std::string_view rule,
                        std::string_view verdict) {
  fmt::print("{}\t{}\t{}\t{}\n", printable(target), endpoint, rule, verdict);
}

// What check's last column says of a request an endpoint's rules denied in report mode: it goes
// on (so it counts as allowed), and the class it would have in enforce mode is kept in sight.
constexpr std::string_view kReportedDenial = "request denied (report mode)";
// ... and of a request an "ask" rule allows (SPEC §20): serve would hold it for the supervisor,
// whom check does not ask (it counts as allowed: the rules let it reach that question).
constexpr std::string_view kAsked = "ok (ask)";

class Checker;

// One TARGET: parsed (step 1), then driven through the decision (table/decision.h) that serve's
// connections drive, with every answer judged so that each gets its line.
struct Judgement {
  std::string_view text;
  std::optional<CheckRequest> request;  // a "METHOD https://..." target: its host is `target`
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
      TargetResult parsed = Reason::invalid_target;
      if (names_request(j.text)) {
        // The shape was checked with the options: only the authority is left to judge.
        j.request = std::get<CheckRequest>(parse_check_request(j.text));
        parsed = parse_authority_default_port(j.request->authority, kInspectDefaultPort);
      } else {
        parsed = parse_check_target(j.text);
      }
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
    for (const Judgement& j : judgements_) {
      const bool allowed = j.request ? print_request(j, options_.serve.proxy.policy.inspect) : print(j);
      all_allowed = allowed && all_allowed;
    }
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

  // Prints a request's one line (SPEC §18); true when it would go on. Its host is judged first,
  // as serve judges every connection before it inspects one: a host refused is refused whatever
  // the rules say (rule "-", the host's class). A host allowed that no endpoint names passes in
  // an opaque tunnel, its requests never seen, so the line is "-" "-" "ok".
  static bool print_request(const Judgement& j, const InspectTable& inspect) {
    if (j.invalid) {
      print_request_line(j.text, "-", "-", log_class(*j.invalid));
      return false;
    }
    const InspectEndpoint* endpoint = j.target.is_name() ? inspect.find(j.target.host, j.target.port) : nullptr;
    const std::string endpoint_shown = endpoint != nullptr ? endpoint_label(*endpoint) : "-";
    if (j.step == Decision::Step::refuse) {
      print_request_line(j.text, endpoint_shown, "-", log_class(j.decision.reason()));
      return false;
    }
    if (endpoint == nullptr) {
      print_request_line(j.text, "-", "-", "ok");
      return true;
    }
    // The check scope's stages (proxy/stages/request_pipeline.cc): those that read no more than a
    // method and a URL, as the inspector runs them.
    const RequestHead head{j.request->method, j.request->target, "HTTP/1.1", {{"Host", j.request->authority}}};
    const ScopeJudgement judged = judge_in_scope(StageScope::check, head, *endpoint, DecidedOrigin{j.target, 443});
    if (judged.report) {
      print_request_line(j.text, endpoint_shown, judged.rule, kReportedDenial);
      return true;
    }
    const std::string_view allowed = judged.ask ? kAsked : std::string_view("ok");
    print_request_line(j.text, endpoint_shown, judged.rule, judged.refusal ? log_class(*judged.refusal) : allowed);
    return !judged.refusal;
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
