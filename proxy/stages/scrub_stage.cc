// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/scrub_stage.h"

namespace boxproxy {

ScrubStage::ScrubStage(std::shared_ptr<const ScrubPatterns> patterns)
    : patterns_(std::move(patterns)), body_(patterns_) {}

void ScrubStage::on_head(std::string& text) {
  if (!patterns_) return;
  if (auto scrubbed = scrub_head_text(text, *patterns_, heads_found_)) text = std::move(*scrubbed);
}

void ScrubStage::renew(std::shared_ptr<const ScrubPatterns> patterns, std::string& out) {
  body_.flush(out);
  for (const std::string& name : body_.found().names()) heads_found_.add(name);
  patterns_ = std::move(patterns);
  body_ = ResponseScrubber(patterns_);
}

void ScrubStage::trace(std::vector<TraceEntry>& out) const {
  ScrubFound all = heads_found_;
  for (const std::string& name : body_.found().names()) all.add(name);
  for (const std::string& name : all.names()) out.push_back({this->name(), name});
}

}  // namespace boxproxy
