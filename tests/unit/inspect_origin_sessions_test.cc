// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/origin_sessions: origins' TLS sessions kept to resume: offered only under the key
// (decided host and port) that gave them, each once, the newest first, and within the bounds (the
// least recently given host dropped first).
#include <doctest/doctest.h>

#include <string>

#include "proxy/inspect/origin_sessions.h"

using namespace boxproxy;

namespace {

SslSessionPtr new_session() {
  SslSessionPtr session(SSL_SESSION_new());
  REQUIRE(session);
  return session;
}

}  // namespace

TEST_CASE("a session is given back under its own key only, once, the newest first") {
  OriginSessions sessions;
  const std::string key = OriginSessions::key_of("api.test", 443);
  CHECK(key == "api.test:443");
  CHECK(OriginSessions::key_of("API.Test", 443) == key);  // names compare without regard to case
  CHECK_FALSE(sessions.take(key));

  SslSessionPtr older = new_session();
  SslSessionPtr newer = new_session();
  SSL_SESSION* older_raw = older.get();
  SSL_SESSION* newer_raw = newer.get();
  sessions.put(key, std::move(older));
  sessions.put(key, std::move(newer));
  // Another port, another host: never given this host's sessions.
  CHECK_FALSE(sessions.take(OriginSessions::key_of("api.test", 8443)));
  CHECK_FALSE(sessions.take(OriginSessions::key_of("other.test", 443)));
  CHECK(sessions.size() == 2);

  CHECK(sessions.take(key).get() == newer_raw);
  CHECK(sessions.take(key).get() == older_raw);
  CHECK_FALSE(sessions.take(key));
  CHECK(sessions.size() == 0);
}

TEST_CASE("at most kMaxSessionsPerKey a host and kMaxOriginSessionKeys hosts, the least recent out first") {
  OriginSessions sessions;
  const std::string key = OriginSessions::key_of("api.test", 443);
  for (std::size_t i = 0; i < kMaxSessionsPerKey + 3; ++i) sessions.put(key, new_session());
  CHECK(sessions.size() == kMaxSessionsPerKey);

  for (std::size_t i = 0; i < kMaxOriginSessionKeys; ++i) {
    sessions.put(OriginSessions::key_of("host" + std::to_string(i) + ".test", 443), new_session());
  }
  // api.test was given least recently: the first to go when the hosts passed their bound.
  CHECK_FALSE(sessions.take(key));
  CHECK(sessions.size() == kMaxOriginSessionKeys);
  // Giving one again makes it the most recent: the next host to come pushes out the oldest other.
  sessions.put(OriginSessions::key_of("host0.test", 443), new_session());
  sessions.put(OriginSessions::key_of("late.test", 443), new_session());
  CHECK(sessions.take(OriginSessions::key_of("host0.test", 443)));
  CHECK_FALSE(sessions.take(OriginSessions::key_of("host1.test", 443)));
}

TEST_CASE("at most kMaxOriginSessions in all: past it the least recently given host's oldest go first") {
  OriginSessions sessions;
  constexpr std::size_t hosts = kMaxOriginSessions / kMaxSessionsPerKey;  // each full: the total reached
  const auto key = [](std::size_t i) { return OriginSessions::key_of("host" + std::to_string(i) + ".test", 443); };
  SSL_SESSION* oldest = nullptr;
  for (std::size_t i = 0; i < hosts; ++i) {
    for (std::size_t j = 0; j < kMaxSessionsPerKey; ++j) {
      SslSessionPtr session = new_session();
      if (i == 0 && j == 0) oldest = session.get();
      sessions.put(key(i), std::move(session));
    }
  }
  CHECK(sessions.size() == kMaxOriginSessions);
  // One more anywhere: host0 (given least recently) loses its oldest, and only that one.
  sessions.put(OriginSessions::key_of("late.test", 443), new_session());
  CHECK(sessions.size() == kMaxOriginSessions);
  std::size_t left = 0;
  bool oldest_left = false;
  while (SslSessionPtr session = sessions.take(key(0))) {
    ++left;
    oldest_left = oldest_left || session.get() == oldest;
  }
  CHECK(left == kMaxSessionsPerKey - 1);
  CHECK_FALSE(oldest_left);
  CHECK(sessions.size() == kMaxOriginSessions - (kMaxSessionsPerKey - 1));
  CHECK(sessions.take(OriginSessions::key_of("late.test", 443)));
}
