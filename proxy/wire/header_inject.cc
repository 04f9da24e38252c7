// SPDX-License-Identifier: Apache-2.0
// Credential injection (proxy/wire/header_inject.h).
#include "proxy/wire/header_inject.h"

#include <algorithm>

#include "table/ascii.h"

namespace boxproxy {

Expansion expand_inject(std::string_view inject_template, const SecretLookup& secrets) {
  // Two passes: the first finds every value (and the size of the result), so the text is made in
  // one allocation and no partly expanded buffer holding a value is ever freed unscrubbed.
  std::size_t size = 0;
  for (std::size_t i = 0; i < inject_template.size(); ++i) {
    if (inject_template[i] != '{') {
      ++size;
      continue;
    }
    const std::size_t close = inject_template.find('}', i);
    if (close == std::string_view::npos) return {{}, std::string()};  // unchecked template: never expanded
    const std::string_view name = inject_template.substr(i + 1, close - i - 1);
    const auto value = secrets.secret(name);
    if (!value) return {{}, std::string(name)};
    size += value->size();
    i = close;
  }
  Expansion out;
  out.text.text().reserve(size);
  for (std::size_t i = 0; i < inject_template.size(); ++i) {
    if (inject_template[i] != '{') {
      out.text.text().push_back(inject_template[i]);
      continue;
    }
    const std::size_t close = inject_template.find('}', i);
    out.text.text().append(*secrets.secret(inject_template.substr(i + 1, close - i - 1)));
    i = close;
  }
  return out;
}

InjectedFields expand_endpoint_inject(const InspectEndpoint& endpoint, const SecretLookup& secrets) {
  InjectedFields out;
  out.fields.reserve(endpoint.inject.size());
  for (const auto& [name, inject_template] : endpoint.inject) {
    Expansion expanded = expand_inject(inject_template, secrets);
    if (expanded.missing) {
      out.fields.clear();  // each value scrubbed as it goes (SecretText)
      out.missing = std::move(expanded.missing);
      return out;
    }
    out.fields.emplace_back(name, std::move(expanded.text));
  }
  return out;
}

bool is_injected_header(const InspectEndpoint& endpoint, std::string_view name) noexcept {
  return std::any_of(endpoint.inject.begin(), endpoint.inject.end(),
                     [&](const auto& field) { return iequals(field.first, name); });
}

RequestHead without_injected_headers(const RequestHead& head, const InspectEndpoint& endpoint) {
  RequestHead out{head.method, head.target, head.version, {}};
  out.headers.reserve(head.headers.size());
  for (const HeaderField& field : head.headers) {
    if (!is_injected_header(endpoint, field.name)) out.headers.push_back(field);
  }
  return out;
}

std::string add_injected_fields(std::string& head, const InjectedFields& fields) {
  constexpr std::string_view kEnd = "\r\n";  // the blank line that ends the head
  std::size_t size = head.size();
  for (const auto& [name, value] : fields.fields) size += name.size() + 2 + value.size() + 2;
  std::string out;
  out.reserve(size);
  const std::string_view before_blank = std::string_view(head).substr(0, head.size() - kEnd.size());
  out.append(before_blank);
  for (const auto& [name, value] : fields.fields) {
    out.append(name);
    out.append(": ");
    out.append(value.view());
    out.append(kEnd);
  }
  out.append(kEnd);
  scrub(head);
  return out;
}

std::optional<std::string> misdirected_placeholder(const RequestHead& head, const InspectEndpoint& endpoint,
                                                  const Placeholders& placeholders) {
  if (placeholders.empty()) return std::nullopt;
  if (auto name = placeholders.find_misdirected(head.target, endpoint.secrets)) return name;
  for (const HeaderField& field : head.headers) {
    if (auto name = placeholders.find_misdirected(field.name, endpoint.secrets)) return name;
    if (auto name = placeholders.find_misdirected(field.value, endpoint.secrets)) return name;
  }
  return std::nullopt;
}

SwappedHead::SwappedHead(const RequestHead& original, const InspectEndpoint& endpoint,
                         const Placeholders& placeholders, const SecretLookup& secrets)
    : head_{original.method, original.target, original.version, original.headers} {
  if (placeholders.empty() || endpoint.secrets.empty()) return;
  texts_.reserve(original.headers.size() + 1);
  // A value is handed to Placeholders::swap as a string; the copy is scrubbed as it goes. (swap's
  // own buffer may grow while it appends, leaving a freed copy unscrubbed: the process is not
  // dumpable, proxy/inspect/secret_store.h.)
  std::string value_text;
  const auto value_of = [&](const std::string& name) -> const std::string* {
    const auto value = secrets.secret(name);
    if (!value) return nullptr;
    scrub(value_text);
    value_text.assign(*value);
    return &value_text;
  };
  // Each text swapped, kept only when it changed; a name not set is the first missing one.
  const auto swapped = [&](std::string_view text) -> std::optional<std::string_view> {
    Placeholders::Swapped out = placeholders.swap(text, endpoint.secrets, value_of);
    if (!out.missing.empty() && !missing_) missing_ = out.missing.front();
    if (out.text == text) {
      scrub(out.text);
      return std::nullopt;
    }
    texts_.push_back(SecretText::adopt(std::move(out.text)));
    return texts_.back().view();
  };
  if (auto target = swapped(original.target)) {
    head_.target = *target;
    target_changed_ = true;
  }
  for (HeaderField& field : head_.headers) {
    if (auto value = swapped(field.value)) field.value = *value;
  }
  scrub(value_text);
}

}  // namespace boxproxy
