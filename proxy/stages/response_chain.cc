// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/response_chain.h"

namespace boxproxy {

void ResponseChain::on_head(std::string& text) {
  for (const auto& stage : stages_) stage->on_head(text);
}

void ResponseChain::on_body(std::string_view piece, BodySink& out) {
  if (stages_.size() == 1) return stages_.front()->on_body(piece, out);  // in place: no copy of its own
  if (stages_.empty()) return out.pass(piece.size());
  std::string input(piece);
  for (const auto& stage : stages_) {
    between_.clear();
    StringBodySink sink(input, between_);
    stage->on_body(input, sink);
    input.swap(between_);
  }
  out.add(input);
  out.drop(piece.size());
}

void ResponseChain::flush(std::string& out) {
  std::string carried;  // what the stages before released, through the rest
  for (const auto& stage : stages_) {
    between_.clear();
    if (!carried.empty()) {
      StringBodySink sink(carried, between_);
      stage->on_body(carried, sink);
    }
    stage->flush(between_);
    carried.swap(between_);
  }
  out += carried;
}

std::size_t ResponseChain::held() const noexcept {
  std::size_t total = 0;
  for (const auto& stage : stages_) total += stage->held();
  return total;
}

std::vector<TraceEntry> ResponseChain::trace() const {
  std::vector<TraceEntry> out;
  for (const auto& stage : stages_) stage->trace(out);
  return out;
}

}  // namespace boxproxy
