// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/packed_move.h: bytes moved between evbuffers, packed.
#include "proxy/inspect/packed_move.h"

#include <algorithm>
#include <new>

namespace boxproxy {

void move_packed(evbuffer* from, evbuffer* to, std::size_t count) {
  while (count > 0) {
    evbuffer_iovec piece{};
    if (evbuffer_peek(from, -1, nullptr, &piece, 1) < 1 || piece.iov_len == 0) throw std::bad_alloc();
    const std::size_t n = std::min(count, piece.iov_len);
    if (n >= kMoveWholeBytes) {
      if (evbuffer_remove_buffer(from, to, n) != static_cast<int>(n)) throw std::bad_alloc();
    } else {
      if (evbuffer_add(to, piece.iov_base, n) != 0) throw std::bad_alloc();
      evbuffer_drain(from, n);
    }
    count -= n;
  }
}

}  // namespace boxproxy
