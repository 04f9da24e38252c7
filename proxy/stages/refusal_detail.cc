// SPDX-License-Identifier: Apache-2.0
// What a refused request's body says after its words (proxy/stages/refusal_detail.h).
#include "proxy/stages/refusal_detail.h"

#include <vector>

#include <fmt/format.h>

#include "table/host_list.h"

namespace boxproxy {
namespace {

// Visible ASCII as it is, everything else (controls, space, DEL, bytes of 0x80 or more) as %XX:
// nothing the box sent can end the line, forge another, or reach a terminal as a control.
void append_visible(std::string& out, std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f) {
      out += c;
    } else {
      constexpr std::string_view kHex = "0123456789ABCDEF";
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0x0f];
    }
  }
}

std::string rule_text(const InspectRule& rule) {
  std::string methods;
  for (const std::string& method : rule.methods) {
    if (!methods.empty()) methods += ',';
    methods += method;
  }
  return methods + ' ' + rule.path.text();
}

// The rules joined by "; ", cut at whole rules once past `budget` bytes ("; and N more").
std::string rules_text(const std::vector<InspectRule>& rules, std::size_t budget) {
  std::string out;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string one = rule_text(rules[i]);
    if (!out.empty() && out.size() + one.size() + 2 > budget) {
      // One format string: " more" appended alone is stored as the immediates " mor" and "e",
      // which lintian reads as a misspelling in the binary.
      out += fmt::format("; and {} more", rules.size() - i);
      break;
    }
    if (!out.empty()) out += "; ";
    out += one;
  }
  return out;
}

}  // namespace

std::string judged_path_text(std::string_view target) {
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  const bool cut = path.size() > kMaxJudgedPathBytes;
  if (cut) path = path.substr(0, kMaxJudgedPathBytes);
  std::string out;
  out.reserve(path.size() + 3);
  append_visible(out, path);
  if (cut) out += "...";
  return out;
}

std::string allowed_text(const InspectEndpoint& endpoint) {
  std::string out;
  if (endpoint.access) {
    out = *endpoint.access == InspectAccess::read_only ? "GET, HEAD, OPTIONS on any path (read-only)"
                                                       : "every method on any path (read-write)";
  } else if (endpoint.rules) {
    out = endpoint.rules->empty() ? "nothing" : rules_text(*endpoint.rules, kMaxHintBytes / 2);
  } else {
    out = "every method and path";
  }
  if (!endpoint.deny.empty()) out += " (denied first: " + rules_text(endpoint.deny, kMaxHintBytes / 2) + ")";
  return out;
}

std::string refusal_detail(const InspectEndpoint& endpoint, std::string_view method, std::string_view target,
                           Reason refusal) {
  // Only where the endpoint's owner chose to tell (what it stops, without "hint": a box mapping the
  // policy by asking; and SPEC §6/§18's one-line body "egress refused: <class>" stays exact).
  if (!endpoint.hint) return {};
  std::string out = ": judged ";
  append_visible(out, method.substr(0, 32));
  out += ' ';
  out += judged_path_text(target);
  out += " at endpoint ";
  out += entry_text(endpoint.host);
  if (refusal == Reason::request_denied) {
    out += "; allowed: ";
    out += allowed_text(endpoint);
  }
  return out;
}

}  // namespace boxproxy
