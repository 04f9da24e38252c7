// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/response_chain.h"

#include <algorithm>

#include "proxy/wire/http_head.h"

namespace boxproxy {

void ResponseChain::on_head(std::string& text) {
  for (const auto& stage : stages_) stage->on_head(text);
}

bool ResponseChain::on_head(ResponseMessage& head) {
  if (stages_.empty()) return true;
  on_head(head.reason);
  std::string line;
  for (MessageField& field : head.fields) {
    line.assign(field.name).append(": ").append(field.value);
    on_head(line);
    if (line.size() == field.name.size() + 2 + field.value.size() && line.starts_with(field.name) &&
        std::string_view(line).substr(field.name.size() + 2) == field.value) {
      continue;  // nothing in it matched
    }
    // Read back as the HTTP/1.1 parser reads a line: the name up to the first colon (a token), the
    // value after it with white space trimmed. A secret in a name becomes its placeholder there,
    // as it would in the text an HTTP/1.1 box gets.
    const std::size_t colon = line.find(':');
    if (colon == 0 || colon == std::string::npos) return false;
    const std::string_view name = std::string_view(line).substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), [](char c) { return is_token_char(static_cast<unsigned char>(c)); })) {
      return false;
    }
    std::string_view value = std::string_view(line).substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    field.value.assign(value);
    field.name.assign(name);
  }
  return true;
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
