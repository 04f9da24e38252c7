// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the fuzz targets: a check that stops the run with a message (libFuzzer keeps
// the input as a crash file), and the "delivered in pieces" framing that several targets use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

// An invariant, not an assert: it is checked in every build type, and a failure aborts so that
// libFuzzer records the input.
#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);     \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

namespace boxproxy::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// How a peer's bytes arrive: the first byte says how many chunk sizes follow (0 to 7), each size
// is one byte (0 reads as 1); the sizes repeat until the payload is used up. No sizes at all means
// one byte at a time, the most split a socket can deliver.
struct Split {
  std::vector<std::size_t> chunks;
  std::string_view payload;
};

inline Split take_split(std::string_view data) {
  Split split;
  if (data.empty()) return split;
  const std::size_t count = static_cast<unsigned char>(data[0]) % 8;
  data.remove_prefix(1);
  for (std::size_t i = 0; i < count && !data.empty(); ++i) {
    const std::size_t n = static_cast<unsigned char>(data[0]);
    split.chunks.push_back(n == 0 ? 1 : n);
    data.remove_prefix(1);
  }
  if (split.chunks.empty()) split.chunks.push_back(1);
  split.payload = data;
  return split;
}

// The ends of the prefixes a connection would hold as the chunks arrive: a parser is always handed
// everything received so far (never one recv at a time). The last end is payload.size().
inline std::vector<std::size_t> prefix_ends(const Split& split) {
  std::vector<std::size_t> ends;
  std::size_t at = 0;
  for (std::size_t i = 0; at < split.payload.size(); ++i) {
    at += split.chunks[i % split.chunks.size()];
    if (at > split.payload.size()) at = split.payload.size();
    ends.push_back(at);
  }
  return ends;
}

// Calls `parse` on each growing prefix until it stops asking for more, as a connection does, and
// returns that answer (or the answer for the whole payload if it never stops).
template <typename Parse>
auto parse_in_pieces(const Split& split, Parse parse) {
  for (const std::size_t end : prefix_ends(split)) {
    auto result = parse(split.payload.substr(0, end));
    if (result.status != decltype(result)::Status::need_more) return result;
  }
  return parse(split.payload);
}

// True when `inner` lies within `outer` (an empty view anywhere in or at the end of it too).
inline bool lies_within(std::string_view inner, std::string_view outer) {
  const char* begin = outer.data();
  const char* end = outer.data() + outer.size();
  return inner.data() >= begin && inner.data() + inner.size() <= end;
}

}  // namespace boxproxy::fuzz
