// SPDX-License-Identifier: Apache-2.0
// Bytes moved from one evbuffer to another within the inspector, packed: every buffer the
// inspector bounds in bytes (a body held to be hashed, a queue toward a side that reads slowly, an
// HTTP/2 stream's body) must also be bounded in the memory that holds those bytes.
//
// What it stops: a peer that sends one byte per TLS record (or per read) makes each read land in
// a block of its own of several KiB. Moved buffer to buffer by pointer (evbuffer_remove_buffer),
// such blocks keep their size: a box dripping a 1 MiB signed body one byte at a time made the
// inspector hold about 4.4 GiB (a review found it). Here a piece shorter than kMoveWholeBytes is
// copied into the end of the destination's last block, so each block there holds at least that
// much or was filled by copies, and the memory a buffer costs stays within a small factor of its
// length whatever the peer's record sizes. Longer pieces still move by pointer (no copy).
#pragma once

#include <event2/buffer.h>

#include <cstddef>

namespace boxproxy {

// A piece at least this long moves by pointer; a shorter one is copied.
inline constexpr std::size_t kMoveWholeBytes = 4096;

// Moves the first `count` bytes of `from` to the end of `to`; `from` must hold at least `count`.
// Throws std::bad_alloc when libevent cannot allocate.
void move_packed(evbuffer* from, evbuffer* to, std::size_t count);

}  // namespace boxproxy
