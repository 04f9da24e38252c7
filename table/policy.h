// SPDX-License-Identifier: Apache-2.0
// The policy a decision (SPEC §5, table/decision.h) is made under, and the parts of it that need
// no state: the host-list check, the --resolve answers, the words of a not-listed refusal.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "table/address.h"
#include "table/address_rule.h"
#include "table/host_list.h"
#include "table/inspect_table.h"
#include "table/reason.h"
#include "table/target.h"

namespace boxproxy {

struct Policy {
  std::optional<HostList> allow;  // set when --allow or --allow-file was given
  AddressRule rule;
  // --resolve: fixed answers by name, lower-cased, without trailing dot.
  std::map<std::string, std::vector<IpAddress>, std::less<>> fixed_answers;
  // --inspect and the config's "inspect" (SPEC §18): the endpoints whose requests are judged one
  // by one, once a connection to one of them has been allowed by the decision.
  InspectTable inspect;
};

// Step 2: the host list, checked before any lookup so that a name off the list never leaves the
// machine. nullopt when the target may go on to be resolved (or there is no list); otherwise it is
// refused as Reason::not_listed and the value says how (an IP literal gives Match::not_listed).
[[nodiscard]] std::optional<HostList::Match> check_host_list(const Policy& policy, const Target& target);

// The --resolve answers for a name, or nullptr when DNS must be asked.
[[nodiscard]] const std::vector<IpAddress>* fixed_answers_for(const Policy& policy, std::string_view name);

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
