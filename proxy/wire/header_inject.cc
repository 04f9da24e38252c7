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

}  // namespace boxproxy
