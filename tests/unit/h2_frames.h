// SPDX-License-Identifier: Apache-2.0
// Raw HTTP/2 frames for the unit tests of both nghttp2 sides (inspect_h2_front_test.cc,
// inspect_h2_back_test.cc): what a hostile peer would write, byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace boxproxy::h2_test {

// A frame: its 9-byte header (24-bit length, type, flags, stream id) and `payload`.
inline std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, std::string_view payload) {
  std::string out;
  const auto length = static_cast<std::uint32_t>(payload.size());
  out += static_cast<char>(length >> 16);
  out += static_cast<char>(length >> 8);
  out += static_cast<char>(length);
  out += static_cast<char>(type);
  out += static_cast<char>(flags);
  for (const int shift : {24, 16, 8, 0}) out += static_cast<char>(stream >> shift);
  out += payload;
  return out;
}

}  // namespace boxproxy::h2_test
