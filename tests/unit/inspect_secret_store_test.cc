// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/secret_store: set, replace in place (the old value overwritten), revoke, the bound
// on how many, and the arena left out of core dumps.
#include "proxy/inspect/secret_store.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace boxproxy {

TEST_CASE("the secret store: set, replaced in place, revoked; the old bytes overwritten") {
  SecretStore store;
  CHECK_FALSE(store.secret("github").has_value());
  REQUIRE(store.set("github", "a-long-first-value"));
  const auto first = store.secret("github");
  REQUIRE(first.has_value());
  CHECK(*first == "a-long-first-value");
  const char* where = first->data();

  REQUIRE(store.set("github", "short"));
  CHECK(*store.secret("github") == "short");
  CHECK(store.secret("github")->data() == where);  // the same slot
  // Nothing of the longer old value is left past the new one.
  CHECK(std::string_view(where + 5, 13) == std::string_view("\0\0\0\0\0\0\0\0\0\0\0\0\0", 13));

  store.revoke("github");
  CHECK_FALSE(store.secret("github").has_value());
  CHECK(std::string_view(where, 5) == std::string_view("\0\0\0\0\0", 5));
  CHECK(store.size() == 0);
  store.revoke("never-set");  // nothing happens
}

TEST_CASE("the secret store holds kMaxSecrets, and a revoked slot is used again") {
  SecretStore store;
  for (std::size_t i = 0; i < kMaxSecrets; ++i) REQUIRE(store.set("s" + std::to_string(i), "v" + std::to_string(i)));
  CHECK(store.size() == kMaxSecrets);
  CHECK_FALSE(store.set("one_more", "v"));
  CHECK(store.set("s3", "replaced"));  // a name it holds is replaced, full or not
  store.revoke("s3");
  CHECK(store.set("one_more", "v"));
  CHECK(*store.secret("one_more") == "v");
  CHECK(*store.secret("s63") == "v63");
  CHECK_FALSE(store.set("big", std::string(kMaxSecretValueBytes + 1, 'x')));
}

TEST_CASE("the secret store's memory is marked out of core dumps (smaps VmFlags dd)") {
  SecretStore store;
  REQUIRE(store.set("k", "value"));
  const auto address = reinterpret_cast<std::uintptr_t>(store.secret("k")->data());
  std::ifstream smaps("/proc/self/smaps");
  REQUIRE(smaps.good());
  std::string line;
  bool inside = false;
  bool found = false;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    // A mapping's first line: "START-END perms ..."; no field line parses as two hex numbers so.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {
      inside = address >= start && address < end;
      continue;
    }
    if (inside && line.starts_with("VmFlags:")) {
      found = true;
      CHECK(line.find(" dd") != std::string::npos);
      break;
    }
  }
  CHECK(found);
}

}  // namespace boxproxy
