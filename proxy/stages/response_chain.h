// SPDX-License-Identifier: Apache-2.0
// The response stages (response_stage.h) one request's response goes through, in order: each
// stage's output is the next one's input. Made per response (stages hold state: what they hold
// back), by the connection that passes the response on.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stages/response_stage.h"

namespace boxproxy {

class ResponseChain {
 public:
  void add(std::unique_ptr<ResponseStage> stage) { stages_.push_back(std::move(stage)); }
  [[nodiscard]] bool empty() const noexcept { return stages_.empty(); }

  void on_head(std::string& text);
  void on_body(std::string_view piece, BodySink& out);
  void flush(std::string& out);  // every stage's hold, in order, through the stages after it
  [[nodiscard]] std::size_t held() const noexcept;
  [[nodiscard]] std::vector<TraceEntry> trace() const;

 private:
  std::vector<std::unique_ptr<ResponseStage>> stages_;
  std::string between_;  // one stage's output on its way to the next (reused)
};

}  // namespace boxproxy
