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
  std::size_t total = 0;
  for (const SecretText& spelling : spellings) {
    views.push_back(spelling.view());
    total += spelling.size();
  }
  // Judged by the spellings' lengths alone, so which search a set gets says nothing of its bytes.
  if (ScrubAutomaton::fits(total)) {
    automaton_.emplace(views);
  } else {
    matcher_ = MultiMatcher(views);
  }
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
  std::vector<MatchedRun> runs;
  const auto on_match = [&](std::size_t i, std::uint32_t pattern) {
    MatchedRun run{i + 1 - patterns.pattern_size(pattern), i, {patterns.secret_of(pattern)}};
    while (!runs.empty() && run.from <= runs.back().to + 1) {
      MatchedRun& last = runs.back();
      run.from = std::min(run.from, last.from);
      std::vector<std::size_t> secrets = std::move(last.secrets);
      for (const std::size_t secret : run.secrets) add_secret(secrets, secret);
      run.secrets = std::move(secrets);
      runs.pop_back();
    }
    runs.push_back(std::move(run));
  };
  if (const ScrubAutomaton* automaton = patterns.automaton()) {
    ScrubAutomaton::Cursor cursor;
    ScrubAutomaton::Work work;
    automaton->for_each_match(cursor, text, work, on_match);
  } else {
    MultiMatcher::State state = MultiMatcher::kStart;
    patterns.matcher().for_each_match(state, text, on_match);
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

namespace {

// The trailing run of printable bytes after `chunk`, given the run before it: what the scrubber
// holds (the top of response_scrubber.h), capped at `limit`. Counted from the chunk's end only.
std::size_t trailing_run(std::string_view chunk, std::size_t run, std::size_t limit) noexcept {
  const std::size_t most = std::min(chunk.size(), limit);
  std::size_t tail = 0;
  while (tail < most && is_held_byte(static_cast<unsigned char>(chunk[chunk.size() - 1 - tail]))) ++tail;
  return tail == chunk.size() ? std::min(run + chunk.size(), limit) : tail;
}

}  // namespace

void ResponseScrubber::feed(std::string_view chunk, std::string& out) {
  StringBodySink sink(chunk, out);
  feed(chunk, sink);
}

void ResponseScrubber::feed(std::string_view chunk, BodySink& out) {
  if (patterns_ == nullptr || patterns_->empty()) {
    out.pass(chunk.size());
    return;
  }
  chunk_ = chunk;
  chunk_base_ = base_ + held_.size();
  copied_ = false;
  scan(chunk);
  run_ = trailing_run(chunk, run_, patterns_->hold_limit());
  const std::size_t release = held_.size() + chunk.size() - run_;
  const std::size_t from_held = std::min(release, held_.size());
  const std::size_t from_chunk = release - from_held;
  const std::string_view source = copied_ ? std::string_view(chunk_copy_) : chunk;
  // The next hold, copied out before the sink is called: it may move or free the chunk's bytes.
  next_held_.assign(held_, from_held);
  next_held_.append(source.substr(from_chunk));
  if (from_held > 0) out.add(std::string_view(held_).substr(0, from_held));
  if (copied_) {
    if (from_chunk > 0) out.add(source.substr(0, from_chunk));
    out.drop(chunk.size());
  } else {
    if (from_chunk > 0) out.pass(from_chunk);
    if (from_chunk < chunk.size()) out.drop(chunk.size() - from_chunk);
  }
  held_.swap(next_held_);
  base_ += release;  // the new hold begins where what was released ends
  chunk_ = {};
}

// The search over the chunk, its state carried from the last (scrub_automaton.h; for a set too
// long for its table, the older matcher, which skips by the spellings' byte pairs).
void ResponseScrubber::scan(std::string_view chunk) {
  const auto on_match = [this](std::size_t i, std::uint32_t pattern) { matched(chunk_base_ + i, pattern); };
  if (const ScrubAutomaton* automaton = patterns_->automaton()) {
    automaton->for_each_match(cursor_, chunk, work_, on_match);
    return;
  }
  const MultiMatcher& matcher = patterns_->matcher();
  const auto* data = reinterpret_cast<const unsigned char*>(chunk.data());
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    if (state_ == MultiMatcher::kStart) {
      const std::size_t to = matcher.skip_from_start(data, chunk.size(), i);
      work_.skips += to - i;
      i = to;
      if (i == chunk.size()) break;
    }
    state_ = matcher.step(state_, data[i]);
    ++work_.steps;
    if (matcher.match(state_) != MultiMatcher::kNoMatch) on_match(i, matcher.match(state_));
  }
}

void ResponseScrubber::flush(std::string& out) {
  out.append(held_);
  base_ += held_.size();
  held_.clear();
  state_ = MultiMatcher::kStart;
  cursor_ = {};
  run_ = 0;
  starred_ = false;
}

void ResponseScrubber::matched(std::uint64_t end, std::uint32_t pattern) {
  const std::uint64_t size = patterns_->pattern_size(pattern);
  // Never before the hold: a spelling is all printable bytes and no longer than the hold limit
  // plus one, so its start is always still here; the bound is kept all the same.
  const std::uint64_t from = std::max<std::uint64_t>(end + 1 - size, base_);
  star(from, end);
  found_.add(patterns_->name(patterns_->secret_of(pattern)));
}

// '*' over [from, to] of the hold and the chunk; the chunk's part in its copy, made at the first
// match that reaches it (the chunk is not the scrubber's to write to).
void ResponseScrubber::write_stars(std::uint64_t from, std::uint64_t to) {
  if (from < chunk_base_) {
    const std::uint64_t last = std::min(to, chunk_base_ - 1);
    std::fill(held_.begin() + static_cast<std::ptrdiff_t>(from - base_),
              held_.begin() + static_cast<std::ptrdiff_t>(last - base_ + 1), '*');
    from = last + 1;
  }
  if (from > to) return;
  if (!copied_) {
    chunk_copy_.assign(chunk_);
    copied_ = true;
  }
  std::fill(chunk_copy_.begin() + static_cast<std::ptrdiff_t>(from - chunk_base_),
            chunk_copy_.begin() + static_cast<std::ptrdiff_t>(to - chunk_base_ + 1), '*');
}

// '*' over [from, to]; each byte written about once, however the matches overlap: the run of bytes
// already starred is remembered and only what a match adds to it is written.
void ResponseScrubber::star(std::uint64_t from, std::uint64_t to) {
  if (starred_ && from <= star_to_ + 1) {
    if (to > star_to_) write_stars(star_to_ + 1, to);
    if (from < star_from_) write_stars(from, star_from_ - 1);
    star_from_ = std::min(star_from_, from);
    star_to_ = std::max(star_to_, to);
    return;
  }
  write_stars(from, to);
  starred_ = true;
  star_from_ = from;
  star_to_ = to;
}

}  // namespace boxproxy
