// SPDX-License-Identifier: Apache-2.0
// Responses scrubbed (proxy/wire/response_scrubber.h).
#include "proxy/wire/response_scrubber.h"

#include <algorithm>

#include "table/secret_spellings.h"

namespace boxproxy {
namespace {

// The bytes a spelling is made of (table/secret_spellings.h): the only ones ever held back.
constexpr bool is_held_byte(unsigned char byte) noexcept { return byte >= 0x21 && byte <= 0x7e; }

}  // namespace

ScrubPatterns::ScrubPatterns(const std::vector<ScrubSecret>& secrets) {
  std::vector<SecretText> spellings;  // overwritten when they go; the matcher keeps its own nodes
  std::size_t longest_value = 0;
  for (std::size_t secret = 0; secret < secrets.size(); ++secret) {
    names_.push_back(secrets[secret].name);
    placeholders_.push_back(secrets[secret].placeholder);
    longest_value = std::max(longest_value, secrets[secret].value.size());
    for (SecretText& spelling : secret_spellings(secrets[secret].value)) {
      spellings.push_back(std::move(spelling));
      secret_of_.push_back(secret);
    }
  }
  std::vector<std::string_view> views;
  views.reserve(spellings.size());
  for (const SecretText& spelling : spellings) views.push_back(spelling.view());
  matcher_ = MultiMatcher(views);
  hold_limit_ = longest_value == 0 ? 0 : longest_spelling_bound(longest_value) - 1;
}

void ScrubFound::add(const std::string& name) {
  if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
}

namespace {

// A run of matched bytes in a head, [from, to], and the secrets in it in the order found.
struct MatchedRun {
  std::size_t from;
  std::size_t to;
  std::vector<std::size_t> secrets;
};

void add_secret(std::vector<std::size_t>& secrets, std::size_t secret) {
  if (std::find(secrets.begin(), secrets.end(), secret) == secrets.end()) secrets.push_back(secret);
}

// Every match in `text`, merged into runs where they overlap or touch (a stack: a long match that
// ends later may swallow runs already closed).
std::vector<MatchedRun> matched_runs(std::string_view text, const ScrubPatterns& patterns) {
  const MultiMatcher& matcher = patterns.matcher();
  std::vector<MatchedRun> runs;
  MultiMatcher::State state = MultiMatcher::kStart;
  for (std::size_t i = 0; i < text.size(); ++i) {
    state = matcher.step(state, static_cast<unsigned char>(text[i]));
    const std::uint32_t pattern = matcher.match(state);
    if (pattern == MultiMatcher::kNoMatch) continue;
    MatchedRun run{i + 1 - matcher.pattern_size(pattern), i, {patterns.secret_of(pattern)}};
    while (!runs.empty() && run.from <= runs.back().to + 1) {
      MatchedRun& last = runs.back();
      run.from = std::min(run.from, last.from);
      std::vector<std::size_t> secrets = std::move(last.secrets);
      for (const std::size_t secret : run.secrets) add_secret(secrets, secret);
      run.secrets = std::move(secrets);
      runs.pop_back();
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace

std::optional<std::string> scrub_head_text(std::string_view text, const ScrubPatterns& patterns, ScrubFound& found) {
  if (patterns.empty()) return std::nullopt;
  const std::vector<MatchedRun> runs = matched_runs(text, patterns);
  if (runs.empty()) return std::nullopt;
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (const MatchedRun& run : runs) {
    out.append(text.substr(at, run.from - at));
    bool every_placeholder = true;
    for (const std::size_t secret : run.secrets) {
      found.add(patterns.name(secret));
      every_placeholder = every_placeholder && !patterns.placeholder(secret).empty();
    }
    // A secret with no placeholder (the session made none for it) is starred as in a body.
    if (!every_placeholder) out.append(run.to - run.from + 1, '*');
    for (const std::size_t secret : run.secrets) {
      if (every_placeholder) out.append(patterns.placeholder(secret));
    }
    at = run.to + 1;
  }
  out.append(text.substr(at));
  return out;
}

ResponseScrubber::ResponseScrubber(std::shared_ptr<const ScrubPatterns> patterns) : patterns_(std::move(patterns)) {}

void ResponseScrubber::feed(std::string_view chunk, std::string& out) {
  if (patterns_ == nullptr || patterns_->empty()) {
    out.append(chunk);
    return;
  }
  const MultiMatcher& matcher = patterns_->matcher();
  const std::size_t limit = patterns_->hold_limit();
  const std::size_t first = buffer_.size();
  buffer_.append(chunk);
  // The state and the run in locals for the whole chunk, and, from the start state, the bytes no
  // spelling starts with passed over without a step (most of a body's bytes): measured at 16 KiB
  // bodies, the matcher's per-byte step was a third of the inspector's time (bench/README.md).
  const unsigned char* data = reinterpret_cast<const unsigned char*>(buffer_.data());
  const std::size_t size = buffer_.size();
  MultiMatcher::State state = state_;
  std::size_t run = run_;
  for (std::size_t i = first; i < size; ++i) {
    const unsigned char byte = data[i];
    // The hold: the trailing run of printable bytes, capped, and nothing else.
    run = is_held_byte(byte) ? std::min(run + 1, limit) : 0;
    if (state == MultiMatcher::kStart && !matcher.starts_with(byte)) continue;
    state = matcher.step(state, byte);
    const std::uint32_t pattern = matcher.match(state);
    if (pattern != MultiMatcher::kNoMatch) matched(base_ + i, pattern);  // stars bytes in place: no reallocation
  }
  state_ = state;
  run_ = run;
  release(buffer_.size() - begin_ - run_, out);
}

void ResponseScrubber::flush(std::string& out) {
  release(buffer_.size() - begin_, out);
  state_ = MultiMatcher::kStart;
  run_ = 0;
  starred_ = false;
}

void ResponseScrubber::matched(std::uint64_t end, std::uint32_t pattern) {
  const std::uint64_t size = patterns_->matcher().pattern_size(pattern);
  // Never before the hold: a spelling is all printable bytes and no longer than the hold limit
  // plus one, so its start is always still here; the bound is kept all the same.
  const std::uint64_t from = std::max<std::uint64_t>(end + 1 - size, base_ + begin_);
  star(from, end);
  found_.add(patterns_->name(patterns_->secret_of(pattern)));
}

// '*' over [from, to]; each byte written about once, however the matches overlap: the run of bytes
// already starred is remembered and only what a match adds to it is written.
void ResponseScrubber::star(std::uint64_t from, std::uint64_t to) {
  const auto write = [this](std::uint64_t a, std::uint64_t b) {
    std::fill(buffer_.begin() + static_cast<std::ptrdiff_t>(a - base_),
              buffer_.begin() + static_cast<std::ptrdiff_t>(b - base_ + 1), '*');
  };
  if (starred_ && from <= star_to_ + 1) {
    if (to > star_to_) write(star_to_ + 1, to);
    if (from < star_from_) write(from, star_from_ - 1);
    star_from_ = std::min(star_from_, from);
    star_to_ = std::max(star_to_, to);
    return;
  }
  write(from, to);
  starred_ = true;
  star_from_ = from;
  star_to_ = to;
}

void ResponseScrubber::release(std::size_t count, std::string& out) {
  out.append(buffer_, begin_, count);
  begin_ += count;
  // Released space is given back once it is at least as large as what is held, so each byte is
  // moved at most once more on average: linear time, and at most twice the hold in memory.
  if (begin_ > 0 && begin_ >= buffer_.size() - begin_) {
    buffer_.erase(0, begin_);
    base_ += begin_;
    begin_ = 0;
  }
}

}  // namespace boxproxy
