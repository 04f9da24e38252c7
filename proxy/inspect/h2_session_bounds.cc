// SPDX-License-Identifier: Apache-2.0
// The bounds both nghttp2 sessions share (proxy/inspect/h2_session_bounds.h).
#include "proxy/inspect/h2_session_bounds.h"

namespace boxproxy {

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
