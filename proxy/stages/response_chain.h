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
#include "proxy/wire/http_message.h"

namespace boxproxy {

class ResponseChain {
 public:
  void add(std::unique_ptr<ResponseStage> stage) { stages_.push_back(std::move(stage)); }
  [[nodiscard]] bool empty() const noexcept { return stages_.empty(); }

  void on_head(std::string& text);
  // A head given as fields (http_message.h; the inspector's HTTP/2 box side), staged as its text
  // would be: the reason, then each field as its line "name: value" (a match never crosses a line:
  // a secret's spelling holds no CR or LF), read back as a parser would read that line. False: a
  // line that no longer reads as a field (a match took in its colon), so the head must not go.
  [[nodiscard]] bool on_head(ResponseMessage& head);
  void on_body(std::string_view piece, BodySink& out);
  void flush(std::string& out);  // every stage's hold, in order, through the stages after it
  [[nodiscard]] std::size_t held() const noexcept;
  [[nodiscard]] std::vector<TraceEntry> trace() const;

 private:
  std::vector<std::unique_ptr<ResponseStage>> stages_;
  std::string between_;  // one stage's output on its way to the next (reused)
};

}  // namespace boxproxy
