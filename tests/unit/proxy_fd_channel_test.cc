// SPDX-License-Identifier: Apache-2.0
// proxy/fd_channel: messages with descriptors between two processes' ends of a socketpair, with
// its bounds held against a hostile far end (raw sendmsg here).
#include "proxy/fd_channel.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "proxy_test_loop.h"

namespace boxproxy {
namespace {

using testing::run_until;

std::size_t open_fds() {
  std::size_t count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  REQUIRE(dir != nullptr);
  while (::readdir(dir) != nullptr) ++count;
  ::closedir(dir);
  return count;
}

// What an owner saw.
struct Seen {
  std::vector<ChannelMessage> messages;
  int closed = 0;
  std::unique_ptr<FdChannel>* delete_on_message = nullptr;  // the owner deletes the channel in it
};

void on_message(void* owner, ChannelMessage message) {
  auto* seen = static_cast<Seen*>(owner);
  seen->messages.push_back(std::move(message));
  if (seen->delete_on_message != nullptr) seen->delete_on_message->reset();
}
void on_closed(void* owner) { ++static_cast<Seen*>(owner)->closed; }

struct Pair {
  EventBasePtr base{event_base_new()};
  Seen a_seen, b_seen;
  std::unique_ptr<FdChannel> a, b;
  Pair() {
    UniqueFd one, other;
    REQUIRE(make_channel_pair(one, other));
    a = std::make_unique<FdChannel>(base.get(), std::move(one), &on_message, &on_closed, &a_seen);
    b = std::make_unique<FdChannel>(base.get(), std::move(other), &on_message, &on_closed, &b_seen);
    REQUIRE(a->valid());
    REQUIRE(b->valid());
  }
};

// A raw end for the hostile cases: its peer is a channel.
struct RawPeer {
  EventBasePtr base{event_base_new()};
  Seen seen;
  UniqueFd raw;
  std::unique_ptr<FdChannel> channel;
  RawPeer() {
    UniqueFd other;
    REQUIRE(make_channel_pair(raw, other));
    channel = std::make_unique<FdChannel>(base.get(), std::move(other), &on_message, &on_closed, &seen);
  }
  void send_raw(std::string_view bytes, const std::vector<int>& fds) const {
    iovec part{const_cast<char*>(bytes.data()), bytes.size()};
    std::vector<unsigned char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    msghdr header{};
    header.msg_iov = &part;
    header.msg_iovlen = 1;
    if (!fds.empty()) {
      header.msg_control = control.data();
      header.msg_controllen = control.size();
      cmsghdr* rights = CMSG_FIRSTHDR(&header);
      rights->cmsg_level = SOL_SOCKET;
      rights->cmsg_type = SCM_RIGHTS;
      rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
    }
    REQUIRE(::sendmsg(raw.get(), &header, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }
};

}  // namespace

TEST_CASE("a message and its descriptors arrive, and the descriptors work") {
  Pair pair;
  int pipe_ends[2];
  REQUIRE(::pipe(pipe_ends) == 0);
  UniqueFd read_end(pipe_ends[0]), write_end(pipe_ends[1]);
  const int fds[] = {write_end.get(), read_end.get()};
  REQUIRE(pair.a->send("connection 7", fds));
  write_end.reset();  // the sender's own copy goes; the channel sent a duplicate
  REQUIRE(run_until(pair.base.get(), [&] { return !pair.b_seen.messages.empty(); }));
  ChannelMessage& got = pair.b_seen.messages.front();
  CHECK(got.bytes == "connection 7");
  REQUIRE(got.fds.size() == 2);
  REQUIRE(::write(got.fds[0].get(), "x", 1) == 1);
  char byte = 0;
  CHECK(::read(read_end.get(), &byte, 1) == 1);
  CHECK(byte == 'x');
  CHECK(pair.a->queued() == 0);
}

TEST_CASE("messages past what the socket holds wait in order, and all arrive") {
  Pair pair;
  const std::size_t count = 200;  // 200 x 60 KiB: far past a socket buffer
  for (std::size_t i = 0; i < count; ++i) {
    std::string message(60 * 1024, 'm');
    message.replace(0, std::to_string(i).size(), std::to_string(i));
    REQUIRE(pair.a->send(message));
  }
  CHECK(pair.a->queued() > 0);
  REQUIRE(run_until(pair.base.get(), [&] { return pair.b_seen.messages.size() == count; }));
  for (std::size_t i = 0; i < count; ++i) {
    CHECK(pair.b_seen.messages[i].bytes.starts_with(std::to_string(i) + "m"));
  }
  CHECK(pair.a->queued() == 0);
}

TEST_CASE("each message arrives at its own length: a short one after a long one carries nothing of it") {
  // Every message is received into one room the process reuses (fd_channel.cc): what a long one
  // left there must never show in a shorter one after it.
  Pair pair;
  REQUIRE(pair.a->send(std::string(kMaxChannelMessageBytes, 'L')));
  REQUIRE(pair.a->send("short"));
  REQUIRE(pair.a->send(std::string(1000, 's')));
  REQUIRE(run_until(pair.base.get(), [&] { return pair.b_seen.messages.size() == 3; }));
  CHECK(pair.b_seen.messages[0].bytes == std::string(kMaxChannelMessageBytes, 'L'));
  CHECK(pair.b_seen.messages[1].bytes == "short");
  CHECK(pair.b_seen.messages[2].bytes == std::string(1000, 's'));
}

TEST_CASE("send refuses what breaks a bound, sending nothing") {
  Pair pair;
  CHECK_FALSE(pair.a->send(""));
  CHECK_FALSE(pair.a->send(std::string(kMaxChannelMessageBytes + 1, 'x')));
  const int five[] = {0, 0, 0, 0, 0};
  CHECK_FALSE(pair.a->send("fds", five));
  CHECK(pair.a->send(std::string(kMaxChannelMessageBytes, 'x')));
  REQUIRE(run_until(pair.base.get(), [&] { return pair.b_seen.messages.size() == 1; }));
  CHECK(pair.b_seen.messages[0].bytes.size() == kMaxChannelMessageBytes);
}

TEST_CASE("the peer's close is told once, and nothing after it") {
  Pair pair;
  pair.a.reset();
  REQUIRE(run_until(pair.base.get(), [&] { return pair.b_seen.closed == 1; }));
  CHECK_FALSE(pair.b->send("late"));
  CHECK(pair.b_seen.messages.empty());
}

TEST_CASE("a hostile peer: too many descriptors end the channel, and none leaks") {
  RawPeer peer;
  const std::size_t before = open_fds();
  std::vector<int> six;
  for (int i = 0; i < 6; ++i) six.push_back(STDIN_FILENO);
  peer.send_raw("too many", six);
  REQUIRE(run_until(peer.base.get(), [&] { return peer.seen.closed == 1; }));
  CHECK(peer.seen.messages.empty());
  CHECK(open_fds() == before);
}

TEST_CASE("a hostile peer: a message over the bound ends the channel, and its descriptors close") {
  RawPeer peer;
  const std::size_t before = open_fds();
  peer.send_raw(std::string(kMaxChannelMessageBytes + 1, 'x'), {STDIN_FILENO});
  REQUIRE(run_until(peer.base.get(), [&] { return peer.seen.closed == 1; }));
  CHECK(peer.seen.messages.empty());
  CHECK(open_fds() == before);
}

TEST_CASE("the owner may delete the channel inside on_message") {
  Pair pair;
  pair.b_seen.delete_on_message = &pair.b;
  REQUIRE(pair.a->send("one"));
  REQUIRE(pair.a->send("two"));
  REQUIRE(run_until(pair.base.get(), [&] { return !pair.b; }));
  CHECK(pair.b_seen.messages.size() == 1);
  CHECK(pair.b_seen.closed == 0);
}

}  // namespace boxproxy
