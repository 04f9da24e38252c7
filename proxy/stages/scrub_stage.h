// SPDX-License-Identifier: Apache-2.0
// SPEC §19a "Responses are scrubbed": the first response stage. Everything an inspected endpoint's
// origin sends back, in a session that holds a secret, is searched for every spelling of every
// secret (proxy/wire/response_scrubber.h): in a head or trailers a match becomes the secret's
// placeholder, in a body or an upgraded stream '*' byte for byte. What it holds back depends on the
// text and the secrets' lengths only, never their bytes (else it would tell the box whether its
// text begins a key). Its trace is scrub=NAME for each secret found.
#pragma once

#include <memory>

#include "proxy/stages/response_stage.h"
#include "proxy/wire/response_scrubber.h"

namespace boxproxy {

class ScrubStage final : public ResponseStage {
 public:
  explicit ScrubStage(std::shared_ptr<const ScrubPatterns> patterns);

  // The session's secrets changed while the response streams: every byte from here on, and what
  // the old set held back, is searched for `patterns` (null: none), so a value set while a stream
  // is open is caught in what comes after, even one begun in the held bytes; what can no longer
  // be part of a match goes to `out` (its trace keeps every name found so far).
  void renew(std::shared_ptr<const ScrubPatterns> patterns, std::string& out);
  [[nodiscard]] const ScrubPatterns* patterns() const noexcept { return patterns_.get(); }

  [[nodiscard]] std::string_view name() const noexcept override { return "scrub"; }
  void on_head(std::string& text) override;
  void on_body(std::string_view piece, BodySink& out) override { body_.feed(piece, out); }
  void flush(std::string& out) override { body_.flush(out); }
  [[nodiscard]] std::size_t held() const noexcept override { return body_.held().size(); }
  [[nodiscard]] std::size_t look_behind() const noexcept override {
    return patterns_ ? patterns_->hold_limit() : 0;
  }
  void trace(std::vector<TraceEntry>& out) const override;

 private:
  std::shared_ptr<const ScrubPatterns> patterns_;
  ResponseScrubber body_;
  ScrubFound heads_found_;
};

}  // namespace boxproxy
