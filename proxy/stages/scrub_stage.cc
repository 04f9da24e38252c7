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
  std::string tail;  // what the old set held back, its own matches starred
  body_.flush(tail);
  for (const std::string& name : body_.found().names()) heads_found_.add(name);
  patterns_ = std::move(patterns);
  body_ = ResponseScrubber(patterns_);
  // The tail goes through the new set, not straight out: a value set now whose spelling begins in
  // the tail and ends in the next bytes would otherwise leave with its first part in clear (and a
  // kept secret's spelling begun there is still caught as it completes).
  body_.feed(tail, out);
}

void ScrubStage::trace(std::vector<TraceEntry>& out) const {
  ScrubFound all = heads_found_;
  for (const std::string& name : body_.found().names()) all.add(name);
  for (const std::string& name : all.names()) out.push_back({this->name(), name});
}

}  // namespace boxproxy
