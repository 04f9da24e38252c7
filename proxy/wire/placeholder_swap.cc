// SPDX-License-Identifier: Apache-2.0
// Where a placeholder is swapped, and where it is a tripwire (proxy/wire/placeholder_swap.h).
#include "proxy/wire/placeholder_swap.h"

#include <algorithm>
#include <cstddef>

#include "table/ascii.h"
#include "table/base64.h"
#include "table/secret_spellings.h"

namespace boxproxy {
namespace {

// What stands where a swappable placeholder stood, in the residue the tripwire searches: a byte
// that is in no placeholder, no "%XX" and no base64, so it never joins what is around it into one.
constexpr char kBlank = ' ';

struct Named {
  std::string_view name;
  std::string_view placeholder;
};

// Who may be swapped where on one endpoint.
struct Plan {
  std::vector<Named> authorization;
  std::vector<std::pair<std::string_view, Named>> headers;  // header name, lower-cased
  std::vector<std::pair<std::string_view, Named>> query;    // parameter name
  [[nodiscard]] bool empty() const noexcept { return authorization.empty() && headers.empty() && query.empty(); }
};

// The places are copied out of the endpoint (secret_places_of returns them by value), so the plan
// keeps them alive for its views.
struct PlanHolder {
  std::vector<std::vector<SecretPlace>> places;
  Plan plan;
};

PlanHolder plan_of(const InspectEndpoint& endpoint, const Placeholders& placeholders) {
  PlanHolder held;
  held.places.reserve(endpoint.secrets.size());
  for (const std::string& name : endpoint.secrets) {
    const std::string* placeholder = placeholders.of(name);
    if (placeholder == nullptr) continue;  // the session gave the box none for it: nothing to swap
    held.places.push_back(secret_places_of(endpoint, name));
    const Named named{name, *placeholder};
    for (const SecretPlace& place : held.places.back()) {
      switch (place.kind) {
        case SecretPlace::Kind::authorization: held.plan.authorization.push_back(named); break;
        case SecretPlace::Kind::header: held.plan.headers.emplace_back(place.name, named); break;
        case SecretPlace::Kind::query: held.plan.query.emplace_back(place.name, named); break;
      }
    }
  }
  return held;
}

// One swap pass over a request: the residue always, the swapped text when values are given.
class Swapper {
 public:
  Swapper(const SecretLookup* secrets, std::size_t budget) : secrets_(secrets), budget_(budget) {}

  // The value to put for `named` (its placeholder when the value is not set, or when only the
  // residue is made); false when the head would grow past the budget.
  bool value_of(const Named& named, std::string_view place, bool percent, SecretText& into) {
    if (secrets_ == nullptr) return into.text().append(named.placeholder), true;
    const auto value = secrets_->secret(named.name);
    if (!value) {
      if (!missing) missing = std::string(named.name);
      into.text().append(named.placeholder);
      return true;
    }
    std::string encoded = percent ? percent_encode_all(*value) : std::string();
    const std::string_view put = percent ? std::string_view(encoded) : *value;
    // The net growth of the head so far; a value shorter than its placeholder makes room.
    grown_ += static_cast<std::ptrdiff_t>(put.size()) - static_cast<std::ptrdiff_t>(named.placeholder.size());
    if (grown_ > 0 && static_cast<std::size_t>(grown_) > budget_) {
      scrub(encoded);
      return over = true, false;
    }
    if (into.text().capacity() < into.size() + put.size()) into.text().reserve(2 * (into.size() + put.size()));
    into.text().append(put);
    scrub(encoded);
    record(named.name, place);
    return true;
  }

  void record(std::string_view name, std::string_view place) {
    std::string entry = std::string(name) + "@" + std::string(place);
    if (std::find(swaps.begin(), swaps.end(), entry) == swaps.end()) swaps.push_back(std::move(entry));
  }

  // Corrects the growth counted so far by `delta`; false when that takes it over budget.
  bool adjust(std::ptrdiff_t delta) {
    grown_ += delta;
    if (grown_ > 0 && static_cast<std::size_t>(grown_) > budget_) over = true;
    return !over;
  }

  [[nodiscard]] std::ptrdiff_t grown() const noexcept { return grown_; }

  std::optional<std::string> missing;
  std::vector<std::string> swaps;
  bool over = false;

 private:
  const SecretLookup* secrets_;
  std::size_t budget_;
  std::ptrdiff_t grown_ = 0;
};

// A text and its residue, as a swap makes them.
struct Swapped {
  SecretText text;
  std::string residue;
  bool changed = false;
};

const Named* placeholder_at(std::string_view text, std::size_t at, const std::vector<const Named*>& names) {
  for (const Named* named : names) {
    if (text.substr(at, named->placeholder.size()) == named->placeholder) return named;
  }
  return nullptr;
}

// Every occurrence of `names`' placeholders in `text`, as made ("header:<name>").
bool swap_every(std::string_view text, const std::vector<const Named*>& names, std::string_view place,
                Swapper& swapper, Swapped& out) {
  for (std::size_t at = 0; at < text.size();) {
    const Named* named = text.compare(at, kPlaceholderPrefix.size(), kPlaceholderPrefix) == 0
                             ? placeholder_at(text, at, names)
                             : nullptr;
    if (named == nullptr) {
      out.text.text().push_back(text[at]);
      out.residue.push_back(text[at]);
      ++at;
      continue;
    }
    if (!swapper.value_of(*named, place, false, out.text)) return false;
    out.residue.push_back(kBlank);
    out.changed = true;
    at += named->placeholder.size();
  }
  return true;
}

const Named* whole(std::string_view text, const std::vector<Named>& names) {
  for (const Named& named : names) {
    if (text == named.placeholder) return &named;
  }
  return nullptr;
}

// A `Basic` credential "user:password" with the placeholder as the whole user or the whole
// password: decoded, swapped, encoded again. False when over budget.
bool swap_basic(std::string_view before, std::string_view credential, std::string_view after,
                const std::vector<Named>& names, Swapper& swapper, Swapped& out) {
  const auto decoded = base64_decode_standard(credential);
  const std::size_t colon = decoded ? decoded->find(':') : std::string::npos;
  if (colon == std::string::npos) return true;
  const std::string_view parts[2] = {std::string_view(*decoded).substr(0, colon),
                                     std::string_view(*decoded).substr(colon + 1)};
  const Named* swapped[2] = {whole(parts[0], names), whole(parts[1], names)};
  if (swapped[0] == nullptr && swapped[1] == nullptr) return true;
  SecretText plain;
  std::string residue(before);
  for (int i = 0; i < 2; ++i) {
    if (i == 1) plain.text().push_back(':'), residue.push_back(':');
    if (swapped[i] == nullptr) {
      plain.text().append(parts[i]);
      residue.append(parts[i]);
    } else {
      if (!swapper.value_of(*swapped[i], "authorization", false, plain)) return false;
      residue.push_back(kBlank);
    }
  }
  SecretText encoded = SecretText::adopt(base64_encode(plain.view(), Base64Alphabet::standard, true));
  // The head grows by the encoded credential's growth, not the decoded text's that value_of counted.
  if (!swapper.adjust(static_cast<std::ptrdiff_t>(encoded.size()) - static_cast<std::ptrdiff_t>(credential.size()) -
                      (static_cast<std::ptrdiff_t>(plain.size()) - static_cast<std::ptrdiff_t>(decoded->size())))) {
    return false;
  }
  out.text.text().reserve(before.size() + encoded.size() + after.size());
  out.text.text().append(before).append(encoded.view()).append(after);
  out.residue = std::move(residue.append(after));
  out.changed = true;
  return true;
}

// The Authorization header's value ("authorization").
bool swap_authorization(std::string_view text, const std::vector<Named>& names, Swapper& swapper, Swapped& out) {
  const std::string_view value = trim_ows(text);
  const std::size_t lead = static_cast<std::size_t>(value.data() - text.data());
  std::size_t from = lead;
  std::string_view credential = value;
  const std::size_t space = value.find(' ');
  std::string_view scheme;
  if (space != std::string_view::npos) {
    scheme = value.substr(0, space);
    credential = trim_ows(value.substr(space + 1));
    from = static_cast<std::size_t>(credential.data() - text.data());
  }
  const std::string_view before = text.substr(0, from);
  const std::string_view after = text.substr(from + credential.size());
  if (iequals(scheme, "basic")) return swap_basic(before, credential, after, names, swapper, out);
  const bool bearer = scheme.empty() || iequals(scheme, "bearer") || iequals(scheme, "token");
  const Named* named = bearer ? whole(credential, names) : nullptr;
  if (named == nullptr) return true;
  out.text.text().reserve(text.size());
  out.text.text().append(before);
  if (!swapper.value_of(*named, "authorization", false, out.text)) return false;
  out.text.text().append(after);
  out.residue = std::string(before) + kBlank + std::string(after);
  out.changed = true;
  return true;
}

// One header value: "authorization" first (on the Authorization header), then every
// "header:<name>" place of its name. Unchanged: out.changed false, out.residue the value.
bool swap_header(const HeaderField& field, const Plan& plan, Swapper& swapper, Swapped& out) {
  out.residue = std::string(field.value);
  if (iequals(field.name, "Authorization") && !plan.authorization.empty()) {
    if (!swap_authorization(field.value, plan.authorization, swapper, out)) return false;
  }
  std::vector<const Named*> names;
  for (const auto& [header, named] : plan.headers) {
    if (iequals(header, field.name)) names.push_back(&named);
  }
  if (names.empty()) return true;
  const std::string place = "header:" + ascii_lower(field.name);
  Swapped again;
  const std::string_view text = out.changed ? out.text.view() : field.value;
  const std::string residue = std::move(out.residue);
  if (!swap_every(text, names, place, swapper, again)) return false;
  // The residue is swapped the same way (placeholders blanked), from the residue so far.
  Swapper blanks(nullptr, SIZE_MAX);
  Swapped residue_pass;
  swap_every(residue, names, place, blanks, residue_pass);
  again.residue = std::move(residue_pass.residue);
  again.changed = again.changed || out.changed;
  out = std::move(again);
  return true;
}

// The request target's query ("query:<param>"); never its path.
bool swap_query(std::string_view target, const Plan& plan, Swapper& swapper, Swapped& out) {
  out.residue = std::string(target);
  const std::size_t question = target.find('?');
  if (plan.query.empty() || question == std::string_view::npos) return true;
  out.text.text().reserve(target.size());
  out.text.text().append(target.substr(0, question + 1));
  std::string residue(target.substr(0, question + 1));
  std::string_view query = target.substr(question + 1);
  for (bool first = true; first || !query.empty(); first = false) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const Named* named = nullptr;
    std::string_view param = pair.substr(0, eq);
    for (const auto& [name, candidate] : plan.query) {
      if (eq != std::string_view::npos && name == param && pair.substr(eq + 1) == candidate.placeholder) named = &candidate;
    }
    if (named == nullptr) {
      out.text.text().append(pair);
      residue.append(pair);
    } else {
      out.text.text().append(pair.substr(0, eq + 1));
      if (!swapper.value_of(*named, "query:" + std::string(param), true, out.text)) return false;
      residue.append(pair.substr(0, eq + 1)).push_back(kBlank);
      out.changed = true;
    }
    if (amp != std::string_view::npos) out.text.text().push_back('&'), residue.push_back('&');
  }
  out.residue = std::move(residue);
  return true;
}

}  // namespace

std::size_t request_head_bytes(const RequestHead& head) noexcept {
  std::size_t size = head.method.size() + 1 + head.target.size() + 1 + head.version.size() + 2 + 2;
  for (const HeaderField& field : head.headers) size += field.name.size() + 2 + field.value.size() + 2;
  return size;
}

std::optional<std::string> misdirected_placeholder(const RequestHead& head, const InspectEndpoint& endpoint,
                                                  const Placeholders& placeholders) {
  if (placeholders.empty()) return std::nullopt;
  const PlanHolder held = plan_of(endpoint, placeholders);
  Swapper blanks(nullptr, SIZE_MAX);
  Swapped target;
  swap_query(head.target, held.plan, blanks, target);
  // Every placeholder left in the residue is where it may not go: no name is allowed there.
  if (auto name = placeholders.find_misdirected(target.residue)) return name;
  for (const HeaderField& field : head.headers) {
    if (auto name = placeholders.find_misdirected(field.name)) return name;
    // SPEC §20: a signing endpoint's signer replaces these four (the box signs with placeholders);
    // what the box put in them never leaves the proxy, so a placeholder there goes nowhere.
    if (endpoint.sign && is_signer_replaced_header(field.name)) continue;
    Swapped value;
    swap_header(field, held.plan, blanks, value);
    if (auto name = placeholders.find_misdirected(value.residue)) return name;
  }
  return std::nullopt;
}

SwappedHead::SwappedHead(const RequestHead& original, const InspectEndpoint& endpoint,
                         const Placeholders& placeholders, const SecretLookup& secrets, std::size_t max_head_bytes)
    : head_{original.method, original.target, original.version, original.headers},
      head_bytes_(request_head_bytes(original)) {
  if (placeholders.empty() || endpoint.secrets.empty()) return;
  const PlanHolder held = plan_of(endpoint, placeholders);
  if (held.plan.empty()) return;
  Swapper swapper(&secrets, max_head_bytes > head_bytes_ ? max_head_bytes - head_bytes_ : 0);
  texts_.reserve(original.headers.size() + 1);
  Swapped target;
  bool within = swap_query(original.target, held.plan, swapper, target);
  if (within && target.changed) {
    texts_.push_back(std::move(target.text));
    head_.target = texts_.back().view();
    target_changed_ = true;
  }
  for (HeaderField& field : head_.headers) {
    if (!within) break;
    Swapped value;
    within = swap_header(field, held.plan, swapper, value);
    if (within && value.changed) {
      texts_.push_back(std::move(value.text));
      field.value = texts_.back().view();
    }
  }
  if (!within) {
    // Over the bound: nothing swapped is kept (each text scrubbed as it goes), nothing is sent.
    too_large_ = true;
    texts_.clear();
    head_ = RequestHead{original.method, original.target, original.version, original.headers};
    target_changed_ = false;
    return;
  }
  missing_ = std::move(swapper.missing);
  swaps_ = std::move(swapper.swaps);
  head_bytes_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(head_bytes_) + swapper.grown());
}

}  // namespace boxproxy
