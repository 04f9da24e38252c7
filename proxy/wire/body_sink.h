// SPDX-License-Identifier: Apache-2.0
// Where a response stage (the scrubber, proxy/wire/response_scrubber.h) puts a body's bytes as they
// go on, without copying those it leaves as they are: it is given a piece of the body where the
// piece lies (an inspected connection's input buffer), and says, in order, for each stretch of the
// piece, whether it goes on as it is (pass) or not (drop: held back, or replaced), and adds bytes
// of its own (what it held before, a starred stretch) between them. The connection moves a passed
// stretch buffer to buffer (evbuffer_remove_buffer: a whole chain by its pointer), so a body that
// needs no change is not copied by the stage. Pure interface.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace boxproxy {

class BodySink {
 public:
  // Bytes of the stage's own, next in the output.
  virtual void add(std::string_view bytes) = 0;
  // The piece's next `count` bytes, next in the output as they are.
  virtual void pass(std::size_t count) = 0;
  // The piece's next `count` bytes, not in the output (the stage has copied what it needs of them).
  virtual void drop(std::size_t count) = 0;

 protected:
  BodySink() = default;
  ~BodySink() = default;
  BodySink(const BodySink&) = default;
  BodySink& operator=(const BodySink&) = default;
};

// A BodySink that appends to a string: for tests, fuzzers and a chain of stages.
class StringBodySink final : public BodySink {
 public:
  // `piece` is what the stage is given, `out` where the output goes; both must outlive the sink.
  StringBodySink(std::string_view piece, std::string& out) noexcept : piece_(piece), out_(out) {}
  void add(std::string_view bytes) override { out_.append(bytes); }
  void pass(std::size_t count) override {
    out_.append(piece_.substr(at_, count));
    at_ += count;
  }
  void drop(std::size_t count) override { at_ += count; }

 private:
  std::string_view piece_;
  std::string& out_;
  std::size_t at_ = 0;
};

}  // namespace boxproxy
