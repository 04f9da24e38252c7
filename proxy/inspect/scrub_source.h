// SPDX-License-Identifier: Apache-2.0
// Where an inspected response's scrubber (SPEC §19a, proxy/wire/response_scrubber.h) gets its
// patterns: every secret the session holds now, each with its placeholder, built once per set of
// values and shared by every response until a secret is set, replaced or revoked.
//
// The patterns are spellings of the values (raw, encoded): they live in the inspector's ordinary
// heap for as long as the values stay as they are. The process is non-dumpable and confined
// (socketd/inspect_main.cc), as for the expanded headers a request carries; the arena of the values
// themselves is the store's (secret_store.h).
#pragma once

#include <cstdint>
#include <memory>

#include "proxy/inspect/secret_store.h"
#include "proxy/wire/response_scrubber.h"
#include "table/placeholder.h"

namespace boxproxy {

class ScrubSource {
 public:
  // Both must outlive the source.
  ScrubSource(const SecretStore& secrets, const Placeholders& placeholders) noexcept
      : secrets_(secrets), placeholders_(placeholders) {}

  // The patterns of every secret set now; null when none is (a session that holds no secret
  // scrubs nothing).
  [[nodiscard]] std::shared_ptr<const ScrubPatterns> patterns();

 private:
  const SecretStore& secrets_;
  const Placeholders& placeholders_;
  std::shared_ptr<const ScrubPatterns> patterns_;
  std::uint64_t built_for_ = 0;  // the store's generation patterns_ was built for
  bool built_ = false;
};

}  // namespace boxproxy
