// SPDX-License-Identifier: Apache-2.0
// Where a request's credentials are looked up (SPEC §19): the inspector's SecretStore, a map in
// the tests. Pure interface; nothing that holds one keeps a value.
#pragma once

#include <optional>
#include <string_view>

namespace boxproxy {

class SecretLookup {
 public:
  virtual ~SecretLookup() = default;
  // NAME's value, valid until the lookup next changes; nullopt when it is not set.
  [[nodiscard]] virtual std::optional<std::string_view> secret(std::string_view name) const = 0;

 protected:
  SecretLookup() = default;
  SecretLookup(const SecretLookup&) = default;
  SecretLookup& operator=(const SecretLookup&) = default;
};

}  // namespace boxproxy
