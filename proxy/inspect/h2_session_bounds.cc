// SPDX-License-Identifier: Apache-2.0
// The bounds both nghttp2 sessions share (proxy/inspect/h2_session_bounds.h).
#include "proxy/inspect/h2_session_bounds.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace boxproxy {
namespace {

void* zeroing_malloc(std::size_t size, void*) { return std::malloc(size); }
void* zeroing_calloc(std::size_t count, std::size_t size, void*) { return std::calloc(count, size); }

void release_to_heap(void* block) { std::free(block); }

// `user` is the table's mem_user_data: null in production (the heap's free), a test's H2Release
// otherwise (zeroing_h2_mem_releasing_to).
void zeroing_free(void* block, void* user) {
  if (block == nullptr) return;
  explicit_bzero(block, malloc_usable_size(block));
  (user == nullptr ? &release_to_heap : *static_cast<H2Release*>(user))(block);
}

// Never realloc in place: a block that moves would leave its old bytes behind unzeroed.
void* zeroing_realloc(void* block, std::size_t size, void* user) {
  if (block == nullptr) return std::malloc(size);
  if (size == 0) {
    zeroing_free(block, user);
    return nullptr;
  }
  void* moved = std::malloc(size);
  if (moved == nullptr) return nullptr;  // the old block stays, as realloc's contract says
  std::memcpy(moved, block, std::min(size, malloc_usable_size(block)));
  zeroing_free(block, user);
  return moved;
}

nghttp2_mem zeroing_mem{nullptr, &zeroing_malloc, &zeroing_free, &zeroing_calloc, &zeroing_realloc};

}  // namespace

nghttp2_mem* zeroing_h2_mem() noexcept { return &zeroing_mem; }

nghttp2_mem zeroing_h2_mem_releasing_to(H2Release* release) noexcept {
  nghttp2_mem mem = zeroing_mem;
  mem.mem_user_data = release;
  return mem;
}

H2OptionPtr bounded_h2_option() noexcept {
  nghttp2_option* raw = nullptr;
  if (nghttp2_option_new(&raw) != 0) return nullptr;
  H2OptionPtr option(raw);
  nghttp2_option_set_no_auto_window_update(option.get(), 1);
  nghttp2_option_set_max_outbound_ack(option.get(), kH2MaxOutboundAcks);
  nghttp2_option_set_max_settings(option.get(), kH2MaxSettings);
  nghttp2_option_set_max_continuations(option.get(), kH2MaxContinuations);
  nghttp2_option_set_max_deflate_dynamic_table_size(option.get(), kH2DeflateTable);
  // Closed streams are not kept for priority: a flood of opened-and-closed streams leaves nothing.
  nghttp2_option_set_no_closed_streams(option.get(), 1);
  return option;
}

H2CallbacksPtr new_h2_callbacks(const H2ReadCallbacks& read) noexcept {
  nghttp2_session_callbacks* raw = nullptr;
  if (nghttp2_session_callbacks_new(&raw) != 0) return nullptr;
  H2CallbacksPtr callbacks(raw);
  nghttp2_session_callbacks_set_on_begin_headers_callback(raw, read.begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(raw, read.header);
  nghttp2_session_callbacks_set_on_invalid_header_callback(raw, read.invalid_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(raw, read.frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(raw, read.data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(raw, read.stream_close);
  return callbacks;
}

}  // namespace boxproxy
