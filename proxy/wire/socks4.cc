// SPDX-License-Identifier: Apache-2.0
// SOCKS4 and SOCKS4a request parsing (SPEC §10).
//
// VN CD DSTPORT(2) DSTIP(4) USERID NUL, and for 4a (DSTIP 0.0.0.x, x != 0) HOST NUL after it.
// The user id and host have no length prefix, so a client could send an endless one: no request
// longer than socks4_max_request_bytes is accepted, and once that many bytes have come without the
// request ending, the connection closes.
#include "proxy/wire/socks4.h"

#include <algorithm>
#include <string>

#include "proxy/wire/socks_wire.h"

namespace boxproxy {
namespace {

constexpr std::size_t kFixedBytes = 8;  // VN CD DSTPORT DSTIP

}  // namespace

using socks::byte_at;

ParseResult<Socks4Request> parse_socks4_request(std::string_view bytes) {
  using Result = ParseResult<Socks4Request>;
  if (bytes.empty()) return Result::need_more();
  if (byte_at(bytes, 0) != socks::kVersion4) return Result::refuse(std::nullopt);
  // Only the first socks4_max_request_bytes may hold the request; bytes past them (early data, or
  // more of an endless user id) are never looked at.
  const std::string_view window = bytes.substr(0, std::min(bytes.size(), socks4_max_request_bytes));
  const bool window_full = bytes.size() >= socks4_max_request_bytes;
  const auto incomplete = [&]() { return window_full ? Result::refuse(std::nullopt) : Result::need_more(); };
  if (window.size() < kFixedBytes) return incomplete();

  Socks4Request request;
  request.command = byte_at(window, 1);
  request.port = static_cast<std::uint16_t>((byte_at(window, 2) << 8) | byte_at(window, 3));
  const std::uint8_t a = byte_at(window, 4), b = byte_at(window, 5), c = byte_at(window, 6), d = byte_at(window, 7);

  const auto user_end = window.find('\0', kFixedBytes);
  if (user_end == std::string_view::npos) return incomplete();
  std::size_t end = user_end + 1;

  request.is_4a = a == 0 && b == 0 && c == 0 && d != 0;
  if (request.is_4a) {
    const auto host_end = window.find('\0', end);
    if (host_end == std::string_view::npos) return incomplete();
    // As sent, even when empty: the decision refuses what is not a host.
    request.host.assign(window.substr(end, host_end - end));
    end = host_end + 1;
  } else {
    request.host = std::to_string(a) + '.' + std::to_string(b) + '.' + std::to_string(c) + '.' + std::to_string(d);
  }
  return Result::done(std::move(request), end);
}

}  // namespace boxproxy
