// SPDX-License-Identifier: Apache-2.0
// What both of an inspected connection's nghttp2 sessions are bounded by, whichever side they face
// (H2Front toward the box, h2_front.h; H2Back toward the origin, h2_back.h): a peer of either is
// hostile, and neither may grow memory with acknowledgements it never reads, SETTINGS entries,
// CONTINUATION frames, HPACK tables or closed streams kept for priority.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <memory>

namespace boxproxy {

// nghttp2's defaults, named so that the manual can state them: acknowledgements (SETTINGS, PING)
// queued for a peer that does not read before the session ends; entries in one SETTINGS frame;
// CONTINUATION frames after one HEADERS.
inline constexpr std::size_t kH2MaxOutboundAcks = 1000;
inline constexpr std::size_t kH2MaxSettings = 32;
inline constexpr std::size_t kH2MaxContinuations = 8;
// The HPACK table the peer's encoder may use (its SETTINGS_HEADER_TABLE_SIZE stays the default)
// and the one ours uses: 4 KiB each.
inline constexpr std::size_t kH2DeflateTable = 4096;
// What one header field costs against a header list bound besides its name and value: 32 bytes,
// as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2, HPACK's entry size). Counting the
// name and value alone, a list of empty fields (one HPACK byte each) held ~64 bytes of
// std::vector<H2Field> per counted byte; with it, a field costs at most about twice its count.
inline constexpr std::size_t kH2FieldOverhead = 32;

struct H2OptionDeleter {
  void operator()(nghttp2_option* o) const noexcept { nghttp2_option_del(o); }
};
struct H2CallbacksDeleter {
  void operator()(nghttp2_session_callbacks* c) const noexcept { nghttp2_session_callbacks_del(c); }
};
using H2OptionPtr = std::unique_ptr<nghttp2_option, H2OptionDeleter>;
using H2CallbacksPtr = std::unique_ptr<nghttp2_session_callbacks, H2CallbacksDeleter>;

// Options with the bounds above, closed streams not kept, and no window opened by nghttp2 itself
// (each side opens its windows only as the bytes go on: what a peer sends ahead is held, and
// bounded by the window); null when nghttp2 cannot allocate.
[[nodiscard]] H2OptionPtr bounded_h2_option() noexcept;

// How both sessions read their peer's frames: each side's own functions for nghttp2's six
// reading callbacks, set in one place so that neither side can forget one.
struct H2ReadCallbacks {
  nghttp2_on_begin_headers_callback begin_headers = nullptr;
  nghttp2_on_header_callback header = nullptr;
  nghttp2_on_invalid_header_callback invalid_header = nullptr;
  nghttp2_on_frame_recv_callback frame_recv = nullptr;
  nghttp2_on_data_chunk_recv_callback data_chunk = nullptr;
  nghttp2_on_stream_close_callback stream_close = nullptr;
};

// A callback table holding `read`'s functions (a side adds its own others); null when nghttp2
// cannot allocate.
[[nodiscard]] H2CallbacksPtr new_h2_callbacks(const H2ReadCallbacks& read) noexcept;

// nghttp2's allocator for a session that carries secrets (H2Back: injected credentials, swapped
// placeholders, the signer's fields): every block is overwritten before it is freed or moved by a
// realloc. What it stops: nghttp2 copies a request's header list at submit and frees the copy, not
// zeroed, once the frame is sent, so a revoked secret's value stayed in the heap (SPEC §19:
// overwritten when replaced or revoked; found in review).
[[nodiscard]] nghttp2_mem* zeroing_h2_mem() noexcept;

// A test's seam (tests/unit/inspect_h2_mem_test.cc): the same functions as zeroing_h2_mem()'s,
// except that a block, once overwritten, goes to `*release` (which must free it) instead of back
// to the heap, so that a test can read the bytes a freed or moved block held when it was let go.
// Production never calls it; zeroing_h2_mem()'s table releases to the heap.
using H2Release = void (*)(void* block);
[[nodiscard]] nghttp2_mem zeroing_h2_mem_releasing_to(H2Release* release) noexcept;

}  // namespace boxproxy
