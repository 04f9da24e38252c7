// SPDX-License-Identifier: Apache-2.0
// The secrets an "inject" template or a placeholder names, from a map: the unit tests' SecretLookup
// (the inspector's is proxy/inspect/secret_store.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/wire/header_inject.h"

namespace boxproxy::testing {

struct MapSecrets final : SecretLookup {
  std::map<std::string, std::string, std::less<>> values;
  [[nodiscard]] std::optional<std::string_view> secret(std::string_view name) const override {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return std::string_view(it->second);
  }
};

}  // namespace boxproxy::testing
