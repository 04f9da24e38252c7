// SPDX-License-Identifier: Apache-2.0
// A response stage: one response-level feature (SPEC §19a's scrubbing is the first), a type in a
// file of its own, run over everything the origin sends back for one request (interim heads, the
// head, the body or stream as it comes, trailers) by a ResponseChain (response_chain.h). A stage
// may rewrite a head's text, and rewrite a body's bytes as they stream, holding back at most
// look_behind() bytes between pieces; the caller releases what is held (flush) when the response
// ends, and when the origin has sent nothing for a while, so a stream never stalls on a stage.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stages/request_context.h"
#include "proxy/wire/body_sink.h"

namespace boxproxy {

class ResponseStage {
 public:
  virtual ~ResponseStage() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  // A whole head or trailer section, as it will be sent: rewritten in place where the stage must.
  virtual void on_head(std::string& text) = 0;
  // The next bytes of the body (as framed) or of an upgraded stream, where they lie: what may go on
  // now goes to `out` (passed as it is where the stage leaves it unchanged: proxy/wire/body_sink.h);
  // the rest is held.
  virtual void on_body(std::string_view piece, BodySink& out) = 0;
  // Appends whatever is held to `out`.
  virtual void flush(std::string& out) = 0;
  // How many bytes are held now; and the most it ever holds.
  [[nodiscard]] virtual std::size_t held() const noexcept = 0;
  [[nodiscard]] virtual std::size_t look_behind() const noexcept = 0;
  // What it did, for the request line (never a value).
  virtual void trace(std::vector<TraceEntry>& out) const = 0;

 protected:
  ResponseStage() = default;
  ResponseStage(const ResponseStage&) = default;
  ResponseStage& operator=(const ResponseStage&) = default;
};

}  // namespace boxproxy
