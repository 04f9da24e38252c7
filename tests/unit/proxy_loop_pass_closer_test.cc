// SPDX-License-Identifier: Apache-2.0
// proxy/loop_pass_closer: a descriptor handed over stays open until the loop has passed through
// epoll once more, then closes; those still waiting close with the closer. A pipe shows it: its
// read end sees the end of file only once the write end is closed.
#include "proxy/loop_pass_closer.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include "proxy_test_loop.h"

namespace boxproxy {
namespace {

struct Pipe {
  UniqueFd read_end, write_end;
  Pipe() {
    int ends[2];
    REQUIRE(::pipe2(ends, O_NONBLOCK | O_CLOEXEC) == 0);
    read_end.reset(ends[0]);
    write_end.reset(ends[1]);
  }
  // True once the write end is closed everywhere (read gives 0: end of file, not EAGAIN).
  [[nodiscard]] bool writer_closed() const {
    char byte = 0;
    return ::read(read_end.get(), &byte, 1) == 0;
  }
};

}  // namespace

TEST_CASE("a descriptor closes after the loop's next pass, not before") {
  EventBasePtr base = make_batching_event_base();
  REQUIRE(base);
  LoopPassCloser closer(base.get());
  REQUIRE(closer.valid());
  Pipe pipe;
  closer.close_after_loop_pass(std::move(pipe.write_end));
  CHECK_FALSE(pipe.write_end.valid());
  CHECK_FALSE(pipe.writer_closed());  // still open: the loop has not passed yet
  REQUIRE(testing::run_until(base.get(), [&] { return pipe.writer_closed(); }));
}

TEST_CASE("descriptors still waiting close with the closer") {
  EventBasePtr base = make_batching_event_base();
  REQUIRE(base);
  Pipe first, second;
  {
    LoopPassCloser closer(base.get());
    closer.close_after_loop_pass(std::move(first.write_end));
    closer.close_after_loop_pass(std::move(second.write_end));
    CHECK_FALSE(first.writer_closed());
  }
  CHECK(first.writer_closed());
  CHECK(second.writer_closed());
}

TEST_CASE("an invalid descriptor is taken without effect") {
  EventBasePtr base = make_batching_event_base();
  REQUIRE(base);
  LoopPassCloser closer(base.get());
  closer.close_after_loop_pass(UniqueFd());
  CHECK(testing::run_until(base.get(), [] { return true; }));
}

}  // namespace boxproxy
