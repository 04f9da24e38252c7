// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/scrub_source.h"

#include <string>
#include <vector>

namespace boxproxy {

std::shared_ptr<const ScrubPatterns> ScrubSource::patterns() {
  if (built_ && built_for_ == secrets_.generation()) return patterns_;
  std::vector<ScrubSecret> secrets;
  for (std::string& name : secrets_.names()) {
    const auto value = secrets_.secret(name);
    if (!value) continue;
    const std::string* placeholder = placeholders_.of(name);
    // In a head a match becomes the placeholder (the box holds it anyway, so a redirect still
    // works); a secret given no placeholder (one the box was never handed) is starred there too.
    secrets.push_back(ScrubSecret{name, *value, placeholder != nullptr ? *placeholder : std::string()});
  }
  patterns_ = secrets.empty() ? nullptr : std::make_shared<const ScrubPatterns>(secrets);
  built_for_ = secrets_.generation();
  built_ = true;
  return patterns_;
}

}  // namespace boxproxy
