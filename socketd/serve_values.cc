// SPDX-License-Identifier: Apache-2.0
// The checks of serve's option values that are more than a range: paths, the host list and its
// file, CIDRs, fixed answers, name servers, the token file, printable text.
#include "socketd/serve_values.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "proxy/defaults.h"
#include "socketd/config_file.h"
#include "table/message_text.h"
#include "table/ascii.h"
#include "table/address.h"

namespace boxproxy {
namespace {

constexpr std::string_view kCommand = "serve";

// Every usage error of a value is built here (through usage_error()): the value is quoted,
// and the whole message made printable, since `what` may repeat a piece a table/ parser quoted
// raw ('\xc6\xbf1' is not an address), and it goes to a terminal.
[[noreturn]] void fail(std::string_view label, std::string_view value, std::string_view what) {
  fail_value(kCommand, label, value, what);
}

// A table/ parser's message usually starts by naming the text ("x=1: '1' is not ..."); the
// usage error names the value itself already, so that prefix is dropped rather than repeated.
std::string_view reason_of(std::string_view message, std::string_view value) {
  if (message.size() > value.size() + 2 && message.substr(0, value.size()) == value &&
      message.substr(value.size(), 2) == ": ") {
    message.remove_prefix(value.size() + 2);
  }
  return message;
}

// "ADDR", "ADDR:PORT", "[V6]", "[V6]:PORT", or a bare IPv6 "V6". Strict addresses (inet_pton).
bool valid_nameserver(std::string_view text) {
  auto port_ok = [](std::string_view port) {
    const auto value = parse_unsigned(port, 65535);
    return port.size() <= 5 && value && *value >= 1;
  };
  // parse_strict_address: inet_pton forms, and an embedded NUL ends no address.
  auto is_v4 = [](std::string_view address) {
    const auto parsed = parse_strict_address(address);
    return parsed && parsed->is_v4();
  };
  auto is_v6 = [](std::string_view address) {
    const auto parsed = parse_strict_address(address);
    return parsed && !parsed->is_v4();
  };
  if (text.empty()) return false;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || !is_v6(text.substr(1, close - 1))) return false;
    const auto rest = text.substr(close + 1);
    return rest.empty() || (rest.front() == ':' && port_ok(rest.substr(1)));
  }
  if (std::count(text.begin(), text.end(), ':') >= 2) return is_v6(text);
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    return is_v4(text.substr(0, colon)) && port_ok(text.substr(colon + 1));
  }
  return is_v4(text);
}

std::string lower_without_trailing_dot(std::string name) {
  if (!name.empty() && name.back() == '.') name.pop_back();
  return ascii_lower(name);
}


// 1-based line of `item` inside `text` when the item is a view into it, else 0.
std::size_t line_of(std::string_view text, std::string_view item) {
  if (item.data() < text.data() || item.data() > text.data() + text.size()) return 0;
  const auto offset = static_cast<std::size_t>(item.data() - text.data());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace

void add_nameservers(const RawValue& raw, std::vector<std::string>& nameservers) {
  for (const auto& text : raw.values) {
    if (!valid_nameserver(text)) fail(raw.label, text, "is not ADDR[:PORT] (an IPv4 address, or [IPv6]:PORT)");
    nameservers.push_back(text);
  }
}

void add_allow_items(HostList& list, const std::string& label, const std::vector<std::string>& values) {
  for (const auto& value : values) {
    for (const auto item : split_host_items(value)) {
      if (const auto error = list.add(item)) fail(label, item, fmt::format("is not a host-list entry: {}", reason_of(*error, item)));
    }
  }
}

void add_allow_file(HostList& list, const std::string& label, const std::string& path) {
  std::string error;
  const auto text = read_file_capped(path, defaults::kMaxAllowFileBytes, error);
  if (!text) fail(label, path, fmt::format("cannot be read: {}", error));
  for (const auto item : split_host_file(*text)) {
    if (const auto message = list.add(item)) {
      const std::size_t line = line_of(*text, item);
      const std::string where = line == 0 ? fmt::format("{} {}", label, quote(path))
                                          : fmt::format("{} {} line {}", label, quote(path), line);
      fail(where, item, fmt::format("is not a host-list entry: {}", reason_of(*message, item)));
    }
  }
}

std::string read_token(const std::string& label, const std::string& path) {
  std::string error;
  auto text = read_file_capped(path, defaults::kMaxTokenBytes, error);
  if (!text) fail(label, path, fmt::format("cannot be read: {}", error));
  // One trailing line end is what an editor or `echo` adds; it is not part of the token.
  if (!text->empty() && text->back() == '\n') {
    text->pop_back();
    if (!text->empty() && text->back() == '\r') text->pop_back();
  }
  // The token itself is never put into a message: only the file is named.
  if (text->empty()) fail(label, path, "holds an empty token");
  for (char c : *text) {
    const auto byte = static_cast<unsigned char>(c);
    // A control character could never arrive intact in a Proxy-Authorization header, so no
    // client could ever authenticate: refuse it at start rather than fail every client.
    if (byte < 0x20 || byte == 0x7f) fail(label, path, "holds a control character or a line break inside the token");
  }
  return std::move(*text);
}

std::string check_path(const RawValue& raw) {
  const std::string& text = raw.values.front();
  if (text.empty()) fail(raw.label, text, "is not a path (it is empty)");
  if (text.find('\0') != std::string::npos) fail(raw.label, text, "is not a path (it holds a NUL)");
  return text;
}

std::optional<HostList> build_host_list(const RawValue* allow, const RawValue* allow_file) {
  if (allow == nullptr && allow_file == nullptr) return std::nullopt;
  HostList list;
  if (allow != nullptr) add_allow_items(list, allow->label, allow->values);
  if (allow_file != nullptr) add_allow_file(list, allow_file->label, check_path(*allow_file));
  return list;
}

// --allow-hint goes into an HTTP status line, --label into every log line: printable ASCII only,
// so that neither can break a line nor carry an escape sequence to a terminal.
const std::string& printable_ascii(const RawValue& raw) {
  const std::string& text = raw.values.front();
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte <= 0x7e;
  });
  if (!printable) fail(raw.label, text, "holds a character outside printable ASCII (0x20 to 0x7e)");
  return text;
}

void add_ranges(const RawValue& raw, std::vector<Cidr>& ranges) {
  for (const auto& text : raw.values) {
    auto parsed = parse_cidr(text);
    if (auto* error = std::get_if<std::string>(&parsed)) fail(raw.label, text, fmt::format("is not a CIDR: {}", reason_of(*error, text)));
    ranges.push_back(std::get<Cidr>(std::move(parsed)));
  }
}

void add_fixed_answers(const RawValue& raw, Policy& policy) {
  for (const auto& text : raw.values) {
    auto parsed = parse_resolve_entry(text);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      fail(raw.label, text, fmt::format("is not NAME=ADDR[,ADDR]...: {}", reason_of(*error, text)));
    }
    auto entry = std::get<ResolveEntry>(std::move(parsed));
    auto& answers = policy.fixed_answers[lower_without_trailing_dot(std::move(entry.name))];
    for (auto& address : entry.addresses) {
      if (std::find(answers.begin(), answers.end(), address) == answers.end()) answers.push_back(std::move(address));
    }
  }
}

// The inspected endpoints (SPEC §18): the config's objects, then the command line's entries,
// merged (neither replaces the other); one host entry named twice, in either or across both, is
// an error naming both places.
void read_inspect(const RawValue* config, const RawValue* command_line, InspectTable& table) {
  std::vector<std::string> labels;  // where each endpoint of the table was named
  const auto add = [&](InspectEndpoint endpoint, std::string label, std::string_view shown) {
    if (const InspectEndpoint* earlier = table.same_host(endpoint.host)) {
      const auto index = static_cast<std::size_t>(earlier - table.endpoints().data());
      fail_value(kCommand, label, shown,
                 fmt::format("names the endpoint {} again, as {} did (each host is named once)",
                             entry_text(endpoint.host), labels[index]));
    }
    (void)table.add(std::move(endpoint));
    labels.push_back(std::move(label));
  };
  if (config != nullptr) {
    for (std::size_t i = 0; i < config->endpoints.size(); ++i) {
      const InspectEndpoint& endpoint = config->endpoints[i];
      add(endpoint, fmt::format("{}[{}].host", config->label, i), entry_text(endpoint.host));
    }
  }
  if (command_line != nullptr) {
    for (const std::string& entry : command_line->values) {
      auto parsed = parse_inspect_entry(entry);
      if (const auto* error = std::get_if<std::string>(&parsed)) {
        std::string_view why = *error;
        if (why.starts_with(entry) && why.substr(entry.size()).starts_with(": ")) why.remove_prefix(entry.size() + 2);
        fail_value(kCommand, command_line->label, entry, why);
      }
      add(std::get<InspectEndpoint>(std::move(parsed)), command_line->label, entry);
    }
  }
}

}  // namespace boxproxy
