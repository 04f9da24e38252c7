// The parts of the decision (SPEC §5) that need no I/O, shared by `serve` and `check` so that
// both judge every target the same way.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "table/address.h"
#include "table/address_rule.h"
#include "table/host_list.h"
#include "table/reason.h"
#include "table/target.h"

namespace boxproxy {

struct Policy {
  std::optional<HostList> allow;  // set when --allow or --allow-file was given
  AddressRule rule;
  // --resolve: fixed answers by name, lower-cased, without trailing dot.
  std::map<std::string, std::vector<IpAddress>, std::less<>> fixed_answers;
};

// Step 2: the host list, checked before any lookup so that a name off the list never leaves the
// machine. nullopt when the target may go on to be resolved (or there is no list); otherwise it is
// refused as Reason::not_listed and the value says how (an IP literal gives Match::not_listed).
[[nodiscard]] std::optional<HostList::Match> check_host_list(const Policy& policy, const Target& target);

// The --resolve answers for a name, or nullptr when DNS must be asked.
[[nodiscard]] const std::vector<IpAddress>* fixed_answers_for(const Policy& policy, std::string_view name);

// Step 4 over every answer: the first refused answer refuses the target with its class.
struct AnswersVerdict {
  std::optional<Reason> refusal;
  // The refused answer when refusal is set; else nothing (all answers are fine).
  std::optional<IpAddress> refused_address;
};
[[nodiscard]] AnswersVerdict judge_answers(const Policy& policy, std::span<const IpAddress> answers,
                                           std::span<const IpAddress> local_addresses);

// Parses "NAME=ADDR[,ADDR]..." (--resolve). Addresses are strict (inet_pton forms). On error, a
// message naming the value.
struct ResolveEntry {
  std::string name;  // lower-cased, trailing dot dropped
  std::vector<IpAddress> addresses;
};
[[nodiscard]] std::variant<ResolveEntry, std::string> parse_resolve_entry(std::string_view text);

// The words of a not-listed refusal (SPEC §6), naming the host when it is plain:
// "example.com is not on this box's network list", "10.0.0.1 is an address, not a name on this
// box's network list", "example.com:8080 is not open on this box's network list"; `hint`
// appended as ": HINT" when not empty. Only printable ASCII comes out.
[[nodiscard]] std::string not_listed_words(const Target& target, HostList::Match match, std::string_view hint);

}  // namespace boxproxy
