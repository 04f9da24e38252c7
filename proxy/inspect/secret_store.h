// SPDX-License-Identifier: Apache-2.0
// The session's secrets in the inspector (SPEC §19): set, replaced and revoked by serve's
// "secret" messages, read by every request that injects one (proxy/wire/header_inject.h).
//
// Where the values live, and why: one arena of kMaxSecrets slots of kMaxSecretValueBytes, mapped
// once at start (before the process confines itself) and marked MADV_DONTDUMP (never in a core
// file, on top of the process being non-dumpable: socketd/inspect_main.cc) and, where RLIMIT_MEMLOCK
// allows, locked (never written to swap); only the pages used are resident. A value replaced or
// revoked is overwritten with explicit_bzero at once, and every value in use when the store goes.
//
// Not covered here (said so the next reader does not assume it): the expanded header a request
// carries (its head is scrubbed by the connection once sent, but libevent's output buffer and
// OpenSSL's record buffers hold it until they are reused or freed, unscrubbed), and the JSON
// text of serve's message (scrubbed by Inspector::order). Only the process being non-dumpable
// keeps those out of a core file and away from another process of the same user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/wire/header_inject.h"
#include "table/secret_value.h"

namespace boxproxy {

class SecretStore final : public SecretLookup {
 public:
  // Maps the arena. Throws std::runtime_error when it cannot (at start: the inspector ends, and
  // serve with it).
  SecretStore();
  ~SecretStore() override;
  SecretStore(const SecretStore&) = delete;
  SecretStore& operator=(const SecretStore&) = delete;

  // Sets NAME (a checked secret name) to `value` (a checked value), overwriting the old value in
  // place. False when NAME is new and every slot is taken (serve counts secrets and never asks
  // for more than kMaxSecrets, so this means a confused serve).
  [[nodiscard]] bool set(std::string_view name, std::string_view value);
  // Revokes NAME: its value overwritten, its slot free. Nothing happens when it is not set.
  void revoke(std::string_view name) noexcept;

  // NAME's value, a view into the arena valid until NAME is next set or revoked.
  [[nodiscard]] std::optional<std::string_view> secret(std::string_view name) const override;
  [[nodiscard]] std::size_t size() const noexcept;
  // The names set now, in slot order.
  [[nodiscard]] std::vector<std::string> names() const;
  // Changes with every set and revoke: what was built from the values (the response scrubber's
  // patterns, proxy/inspect/scrub_source.h) is built again when it moved.
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  // Whether the arena is out of core files, and locked in memory (for the start's notice).
  [[nodiscard]] bool locked() const noexcept { return locked_; }

 private:
  struct Slot {
    std::string name;  // empty: free
    std::size_t length = 0;
  };
  [[nodiscard]] char* bytes_of(std::size_t slot) const noexcept;

  char* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  bool locked_ = false;
  std::vector<Slot> slots_;
  std::uint64_t generation_ = 0;
};

}  // namespace boxproxy
