// SPDX-License-Identifier: Apache-2.0
// Many patterns at once (table/multi_match.h).
#include "table/multi_match.h"

#include <string.h>  // explicit_bzero

#include <algorithm>

namespace boxproxy {

MultiMatcher::MultiMatcher(const std::vector<std::string_view>& patterns) {
  nodes_.emplace_back();  // the start state
  sizes_.reserve(patterns.size());
  for (std::uint32_t id = 0; id < patterns.size(); ++id) {
    const std::string_view pattern = patterns[id];
    sizes_.push_back(static_cast<std::uint32_t>(pattern.size()));
    if (pattern.empty()) continue;
    if (pattern.size() > longest_) longest_ = pattern.size();
    std::uint32_t node = 0;
    for (const char c : pattern) {
      const auto byte = static_cast<unsigned char>(c);
      const std::uint32_t next = child(node, byte);
      node = next != 0 ? next : add_child(node, byte);
    }
    if (nodes_[node].match == kNoMatch) nodes_[node].match = id;
  }
  link();
  build_shifts(patterns);
}

// The shift of a pair ending a window of window_ bytes: how far the window may move on before a
// pattern could begin within it, the least over every place the pair sits within a pattern's
// first window_ bytes (window_ - 2 - offset); window_ - 1 where it sits in none.
void MultiMatcher::build_shifts(const std::vector<std::string_view>& patterns) {
  std::size_t shortest = 0;
  for (const std::string_view pattern : patterns) {
    if (!pattern.empty() && (shortest == 0 || pattern.size() < shortest)) shortest = pattern.size();
  }
  if (shortest < 2) return;  // a window of one byte: starts_with() is all there is
  window_ = std::min(shortest, kMaxWindow);
  shifts_.assign(std::size_t{1} << 14, static_cast<std::uint8_t>(window_ - 1));
  for (const std::string_view pattern : patterns) {
    if (pattern.empty()) continue;
    for (std::size_t offset = 0; offset + 2 <= window_; ++offset) {
      std::uint8_t& shift = shifts_[pair_index(static_cast<unsigned char>(pattern[offset]),
                                               static_cast<unsigned char>(pattern[offset + 1]))];
      shift = std::min(shift, static_cast<std::uint8_t>(window_ - 2 - offset));
    }
  }
}

std::size_t MultiMatcher::skip_from_start(const unsigned char* text, std::size_t size, std::size_t at) const noexcept {
  if (!shifts_.empty()) {
    while (at + window_ <= size) {
      const std::uint8_t shift = shifts_[pair_index(text[at + window_ - 2], text[at + window_ - 1])];
      if (shift != 0) {
        at += shift;
      } else if (start_[text[at]] != 0) {
        return at;
      } else {
        ++at;
      }
    }
  }
  // The last bytes, too few for a window: one by one, as the start state's step would.
  while (at < size && start_[text[at]] == 0) ++at;
  return at;
}

MultiMatcher::~MultiMatcher() {
  // The nodes' bytes spell the patterns (secrets): not left in freed memory.
  if (!nodes_.empty()) ::explicit_bzero(nodes_.data(), nodes_.size() * sizeof(Node));
  ::explicit_bzero(start_.data(), sizeof(start_));
  if (!shifts_.empty()) ::explicit_bzero(shifts_.data(), shifts_.size());
}

std::uint32_t MultiMatcher::child(std::uint32_t node, unsigned char byte) const noexcept {
  for (std::uint32_t at = nodes_[node].first_child; at != 0; at = nodes_[at].next_sibling) {
    if (nodes_[at].byte == byte) return at;
  }
  return 0;
}

std::uint32_t MultiMatcher::add_child(std::uint32_t node, unsigned char byte) {
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  Node added;
  added.byte = byte;
  added.next_sibling = nodes_[node].first_child;
  nodes_.push_back(added);
  nodes_[node].first_child = id;
  return id;
}

// Failure links and longest matches, breadth first, so that every node's failure (a shorter
// prefix) is done before it.
void MultiMatcher::link() {
  for (unsigned b = 0; b < 256; ++b) start_[b] = child(0, static_cast<unsigned char>(b));
  std::vector<std::uint32_t> queue;
  queue.reserve(nodes_.size());
  for (std::uint32_t at = nodes_[0].first_child; at != 0; at = nodes_[at].next_sibling) queue.push_back(at);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t node = queue[head];
    if (nodes_[node].match == kNoMatch) nodes_[node].match = nodes_[nodes_[node].fail].match;
    for (std::uint32_t at = nodes_[node].first_child; at != 0; at = nodes_[at].next_sibling) {
      nodes_[at].fail = step(nodes_[node].fail, nodes_[at].byte);
      queue.push_back(at);
    }
  }
}

MultiMatcher::State MultiMatcher::step(State state, unsigned char byte) const noexcept {
  while (state != kStart) {
    const std::uint32_t next = child(state, byte);
    if (next != 0) return next;
    state = nodes_[state].fail;
  }
  return start_[byte];
}

}  // namespace boxproxy
