// SPDX-License-Identifier: Apache-2.0
// table/tls_failure: the words of tls= and back, each value once.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "table/tls_failure.h"

using namespace boxproxy;

TEST_CASE("every TLS failure has its own word, read back to the same value") {
  std::set<std::string> seen;
  for (int i = 0; i <= static_cast<int>(TlsFailure::error); ++i) {
    const auto failure = static_cast<TlsFailure>(i);
    const std::string_view name = tls_failure_name(failure);
    CAPTURE(name);
    CHECK(seen.insert(std::string(name)).second);
    CHECK(tls_failure_from_name(name) == std::optional<TlsFailure>(failure));
    // A token: it stands alone as tls=WORD in a text line.
    CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string_view::npos);
  }
  CHECK(tls_failure_name(TlsFailure::unknown_ca) == "unknown-ca");
  CHECK(tls_failure_name(TlsFailure::name_mismatch) == "name-mismatch");
  CHECK_FALSE(tls_failure_from_name("unknown_ca"));
  CHECK_FALSE(tls_failure_from_name(""));
  CHECK_FALSE(tls_failure_from_name("Unknown-CA"));
}
