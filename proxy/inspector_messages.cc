// SPDX-License-Identifier: Apache-2.0
// The messages between serve and its inspector (proxy/inspector_messages.h).
#include "proxy/inspector_messages.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>

#include "proxy/fd_channel.h"
#include "proxy/wire/json_nesting.h"
#include "table/inspect_endpoint.h"
#include "table/placeholder.h"

namespace boxproxy {
namespace {

using Json = nlohmann::json;

// No message nests deeper than the endpoints' rules: array, endpoint, rules, rule.
constexpr std::size_t kMaxMessageNesting = 8;

// A value of the wrong shape: thrown inside a parse, caught at its top.
struct Refused {
  std::string why;
};

[[noreturn]] void refuse(std::string why) { throw Refused{std::move(why)}; }
[[noreturn]] void refuse_key(const char* key) { refuse(std::string("bad \"") + key + "\""); }

const Json& field(const Json& object, const char* key) {
  const auto at = object.find(key);
  if (at == object.end()) refuse(std::string("no \"") + key + "\"");
  return *at;
}

std::uint64_t number(const Json& object, const char* key, std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) {
  const Json& value = field(object, key);
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > most) refuse_key(key);
  return value.get<std::uint64_t>();
}

bool flag(const Json& object, const char* key) {
  const Json& value = field(object, key);
  if (!value.is_boolean()) refuse_key(key);
  return value.get<bool>();
}

// A string of printable ASCII, 1 to `most` bytes, spaces only where `spaces` (a class: "request
// denied"): what the inspector reports is logged, and a line must not be broken, stretched or
// split into fields by it whatever the inspector was made to say.
void check_text(std::string_view s, const char* key, std::size_t most, bool spaces) {
  if (s.empty() || s.size() > most || s.front() == ' ' || s.back() == ' ') refuse_key(key);
  for (const char c : s) {
    if ((c < 0x21 && !(spaces && c == ' ')) || c > 0x7e) refuse_key(key);
  }
}

std::string text(const Json& object, const char* key, std::size_t most, bool spaces = false) {
  const Json& value = field(object, key);
  if (!value.is_string()) refuse_key(key);
  const auto& s = value.get_ref<const std::string&>();
  check_text(s, key, most, spaces);
  return s;
}

std::optional<std::string> optional_text(const Json& object, const char* key, std::size_t most) {
  if (!object.contains(key)) return std::nullopt;
  return text(object, key, most);
}

// Seconds, as serve's options take them: more than 0 (or 0 itself, when `zero_allowed`) and at
// most a day.
double seconds(const Json& object, const char* key, bool zero_allowed) {
  const Json& value = field(object, key);
  if (!value.is_number()) refuse_key(key);
  const double s = value.get<double>();
  if (!(zero_allowed ? s >= 0 : s > 0) || s > defaults::kMaxSeconds) refuse_key(key);
  return s;
}

std::uint64_t id_of(const Json& object) { return number(object, "id"); }

Json parse_object(std::string_view bytes) {
  if (bytes.size() > kMaxChannelMessageBytes) refuse("too long");
  if (json_nesting_depth(bytes, kMaxMessageNesting) > kMaxMessageNesting) refuse("nested too deep");
  Json message = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) refuse("not a JSON object");
  return message;
}

InspectorReport report_of(const Json& message) {
  const std::string op = text(message, "op", 16);
  if (op == "ready") {
    const Json& ca = field(message, "ca");
    if (!ca.is_string() || ca.get_ref<const std::string&>().size() > kMaxCaPemBytes ||
        !ca.get_ref<const std::string&>().starts_with("-----BEGIN CERTIFICATE-----")) {
      refuse_key("ca");
    }
    return InspectorReady{ca.get<std::string>()};
  }
  // A request line comes only in its one shape (request_of, below): a message of another shape
  // naming it is not read a second way.
  if (op == "request") refuse("request not in its shape");
  if (op == "dial") return InspectorDial{id_of(message)};
  if (op == "ask") {
    InspectorAsk ask;
    ask.id = id_of(message);
    ask.n = number(message, "n");
    ask.method = text(message, "method", kMaxReportedMethodBytes);
    ask.path = text(message, "path", kMaxAskedPathBytes);
    // An origin-form path: it goes into the supervisor's event and the always set as it is.
    if (!ask.path.starts_with('/') || ask.path.find('?') != std::string::npos) refuse_key("path");
    ask.query = flag(message, "query");
    ask.rule = text(message, "rule", kMaxReportedRuleBytes);
    return ask;
  }
  if (op == "ended") {
    InspectorEnded ended;
    ended.id = id_of(message);
    ended.up = number(message, "up");
    ended.down = number(message, "down");
    ended.end = text(message, "end", 32);
    if (message.contains("class")) ended.log_class = text(message, "class", 32, /*spaces=*/true);
    if (message.contains("tls")) {
      ended.tls = tls_failure_from_name(text(message, "tls", 32));
      if (!ended.tls) refuse_key("tls");  // a word of the vocabulary, or nothing goes on the line
    }
    return ended;
  }
  refuse("unknown op");
}

InspectorOrder order_of(const Json& message) {
  const std::string op = text(message, "op", 16);
  const auto endpoints_json = [&] {
    const Json& endpoints = field(message, "endpoints");
    if (!endpoints.is_array()) refuse_key("endpoints");
    return endpoints.dump();
  };
  if (op == "start") {
    const Json& label = field(message, "label");
    if (!label.is_string()) refuse_key("label");
    InspectorStart start{label.get<std::string>(), flag(message, "log_paths"), endpoints_json()};
    start.head_timeout = seconds(message, "head_timeout", false);
    start.idle_timeout = seconds(message, "idle_timeout", true);
    start.max_head_bytes = number(message, "max_head_bytes", defaults::kMaxHeadBytesMax);
    if (start.max_head_bytes < defaults::kMaxHeadBytesMin) refuse_key("max_head_bytes");
    start.max_held_body = number(message, "max_held_body", defaults::kMaxHeldBodyMax);
    return start;
  }
  if (op == "endpoints") return InspectorEndpoints{endpoints_json()};
  if (op == "connection") {
    InspectorConnection connection;
    connection.id = id_of(message);
    connection.host = text(message, "host", 255);
    connection.port = static_cast<std::uint16_t>(number(message, "port", 65535));
    connection.endpoint = text(message, "endpoint", 300);
    return connection;
  }
  if (op == "dialled") return InspectorDialled{id_of(message), flag(message, "ok")};
  if (op == "answer") {
    const auto asked = parse_asked(text(message, "asked", 16));
    if (!asked) refuse_key("asked");
    return InspectorAnswer{id_of(message), number(message, "n"), *asked};
  }
  if (op == "placeholder") {
    InspectorPlaceholder placeholder{text(message, "name", 32), text(message, "value", 80)};
    if (check_secret_name(placeholder.name) || !placeholder.value.starts_with(kPlaceholderPrefix)) refuse_key("name");
    return placeholder;
  }
  refuse("unknown op");
}

struct ReportWriter {
  Json operator()(const InspectorReady& ready) const { return {{"op", "ready"}, {"ca", ready.ca_pem}}; }
  Json operator()(const InspectorRequest&) const { return nullptr; }  // written by request_message
  Json operator()(const InspectorDial& dial) const { return {{"op", "dial"}, {"id", dial.id}}; }
  Json operator()(const InspectorAsk& ask) const {
    return {{"op", "ask"},          {"id", ask.id},       {"n", ask.n},      {"method", ask.method},
            {"path", ask.path}, {"query", ask.query}, {"rule", ask.rule}};
  }
  Json operator()(const InspectorEnded& ended) const {
    Json out = {{"op", "ended"}, {"id", ended.id}, {"up", ended.up}, {"down", ended.down}, {"end", ended.end}};
    if (ended.log_class) out["class"] = *ended.log_class;
    if (ended.tls) out["tls"] = std::string(tls_failure_name(*ended.tls));
    return out;
  }
};

struct OrderWriter {
  static Json endpoints(const std::string& text) {
    Json parsed = Json::parse(text, nullptr, false);
    return parsed.is_array() ? parsed : Json::array();
  }
  Json operator()(const InspectorStart& start) const {
    return {{"op", "start"},
            {"label", start.label},
            {"log_paths", start.log_paths},
            {"head_timeout", start.head_timeout},
            {"idle_timeout", start.idle_timeout},
            {"max_head_bytes", start.max_head_bytes},
            {"max_held_body", start.max_held_body},
            {"endpoints", endpoints(start.endpoints_json)}};
  }
  Json operator()(const InspectorEndpoints& update) const {
    return {{"op", "endpoints"}, {"endpoints", endpoints(update.endpoints_json)}};
  }
  Json operator()(const InspectorConnection& connection) const {
    return {{"op", "connection"}, {"id", connection.id}, {"host", connection.host}, {"port", connection.port},
            {"endpoint", connection.endpoint}};
  }
  Json operator()(const InspectorDialled& dialled) const {
    return {{"op", "dialled"}, {"id", dialled.id}, {"ok", dialled.ok}};
  }
  Json operator()(const InspectorSecret&) const { return nullptr; }  // written by secret_message
  Json operator()(const InspectorPlaceholder& placeholder) const {
    return {{"op", "placeholder"}, {"name", placeholder.name}, {"value", placeholder.value}};
  }
  Json operator()(const InspectorAnswer& answer) const {
    return {{"op", "answer"}, {"id", answer.id}, {"n", answer.n}, {"asked", asked_text(answer.asked)}};
  }
};

// ---- the secret message, by hand ------------------------------------------------------------
// Exactly {"op":"secret","name":"NAME","value":"HEX"} or {"op":"secret","name":"NAME","value":null}:
// a name is [a-z0-9_] and hex [0-9a-f], so nothing needs escaping, and nothing else is accepted.

constexpr std::string_view kSecretPrefix = R"({"op":"secret","name":")";
constexpr std::string_view kSecretMiddle = R"(","value":)";

std::string secret_message(const InspectorSecret& secret) {
  const SecretText hex = secret.value ? secret_hex(secret.value->view()) : SecretText();
  std::string out;
  out.reserve(kSecretPrefix.size() + secret.name.size() + kSecretMiddle.size() + hex.size() + 8);
  out.append(kSecretPrefix).append(secret.name).append(kSecretMiddle);
  if (secret.value) {
    out.append("\"").append(hex.view()).append("\"}");
  } else {
    out.append("null}");
  }
  return out;
}

std::variant<InspectorOrder, std::string> secret_of(std::string_view bytes) {
  std::string_view rest = bytes.substr(kSecretPrefix.size());
  const std::size_t name_end = rest.find('"');
  if (name_end == std::string_view::npos) return std::string("bad \"name\"");
  InspectorSecret secret{std::string(rest.substr(0, name_end)), std::nullopt};
  if (check_secret_name(secret.name)) return std::string("bad \"name\"");
  rest.remove_prefix(name_end);
  if (!rest.starts_with(kSecretMiddle)) return std::string("bad \"value\"");
  rest.remove_prefix(kSecretMiddle.size());
  if (rest == "null}") return InspectorOrder(std::move(secret));
  if (!rest.starts_with('"') || !rest.ends_with("\"}")) return std::string("bad \"value\"");
  secret.value = secret_from_hex(rest.substr(1, rest.size() - 3));
  if (!secret.value) return std::string("bad \"value\"");
  return InspectorOrder(std::move(secret));
}

// ---- the request message, by hand ------------------------------------------------------------
// One for every request on every inspected connection, so it is written and read without a JSON
// document: nlohmann's parse, its object and its checks were a quarter of serve's CPU for each
// inspected request, and building and dumping one 4% of the inspector's (perf, 2026-12-06). It
// is still one line of JSON, in exactly one shape:
//   {"op":"request","id":N,"method":"M","rule":"R","class":"C","status":S,"up":U,"down":D,"ms":T,
//    "report":true|false[,"path":"P"][,"secret":"NAME"][,"swap":"..."][,"inject":"..."][,"sign":"aws-sigv4"][,"asked":"A"]
//    [,"scrub":"NAME,..."]}
// Numbers are decimal, no sign, fraction, exponent or leading zero. Strings hold what text()
// takes (printable ASCII: the inspector reports nothing else), with '"' and '\' escaped as \" and
// \\ and no other escape: anything else is refused, as the general path refuses a bad field.

constexpr std::string_view kRequestPrefix = R"({"op":"request")";

void append_key(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void append_number(std::string& out, std::string_view key, std::uint64_t value) {
  append_key(out, key);
  char digits[24];
  const auto written = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, written.ptr);
}

void append_text(std::string& out, std::string_view key, std::string_view value) {
  append_key(out, key);
  out += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

std::string request_message(const InspectorRequest& request) {
  std::string out;
  out.reserve(160 + request.method.size() + request.rule.size() + (request.path ? request.path->size() : 0));
  out += kRequestPrefix;
  append_number(out, "id", request.id);
  append_text(out, "method", request.method);
  append_text(out, "rule", request.rule);
  append_text(out, "class", request.log_class);
  append_number(out, "status", request.status);
  append_number(out, "up", request.up);
  append_number(out, "down", request.down);
  append_number(out, "ms", request.ms);
  append_key(out, "report");
  out += request.report ? "true" : "false";
  if (request.path) append_text(out, "path", *request.path);
  if (request.secret) append_text(out, "secret", *request.secret);
  if (!request.swap.empty()) append_text(out, "swap", request.swap);
  if (!request.inject.empty()) append_text(out, "inject", request.inject);
  if (!request.sign.empty()) append_text(out, "sign", request.sign);
  if (request.asked) append_text(out, "asked", asked_text(*request.asked));
  if (!request.scrub.empty()) append_text(out, "scrub", request.scrub);
  out += '}';
  return out;
}

// Reads request_message's shape, field by field, with the general path's checks on each value.
class RequestReader {
 public:
  explicit RequestReader(std::string_view bytes) : rest_(bytes.substr(kRequestPrefix.size())) {}

  [[nodiscard]] bool has_key(std::string_view key) const {
    return rest_.size() > key.size() + 4 && rest_.starts_with(",\"") && rest_.substr(2).starts_with(key) &&
           rest_.substr(2 + key.size()).starts_with("\":");
  }
  std::uint64_t number(const char* key, std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) {
    take_key(key);
    std::size_t n = 0;
    while (n < rest_.size() && rest_[n] >= '0' && rest_[n] <= '9') ++n;
    std::uint64_t value = 0;
    const auto read = std::from_chars(rest_.data(), rest_.data() + n, value);
    if (n == 0 || (n > 1 && rest_[0] == '0') || read.ec != std::errc() || value > most) refuse_key(key);
    rest_.remove_prefix(n);
    return value;
  }
  std::string text(const char* key, std::size_t most, bool spaces = false) {
    take_key(key);
    if (!rest_.starts_with('"')) refuse_key(key);
    std::string out;
    std::size_t i = 1;
    for (; i < rest_.size() && rest_[i] != '"'; ++i) {
      if (rest_[i] == '\\') {
        if (++i == rest_.size() || (rest_[i] != '"' && rest_[i] != '\\')) refuse_key(key);
      }
      if (out.size() == most) refuse_key(key);  // stops early: check_text would refuse it anyway
      out += rest_[i];
    }
    if (i == rest_.size()) refuse_key(key);  // unterminated
    rest_.remove_prefix(i + 1);
    check_text(out, key, most, spaces);
    return out;
  }
  bool flag(const char* key) {
    take_key(key);
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "true" : "false";
      if (rest_.starts_with(word)) {
        rest_.remove_prefix(word.size());
        return value;
      }
    }
    refuse_key(key);
  }
  void end() const {
    if (rest_ != "}") refuse("not in its shape");
  }

 private:
  void take_key(const char* key) {
    if (!has_key(key)) refuse_key(key);
    rest_.remove_prefix(std::string_view(key).size() + 4);
  }
  std::string_view rest_;
};

bool bad_name_item(std::string_view item) { return check_secret_name(item).has_value(); }
bool bad_header_item(std::string_view item) { return check_inject_header(item).has_value(); }
// NAME@PLACE: a secret name, and a place of printable bytes (secret_place_text's: no ',', no space).
bool bad_swap_item(std::string_view item) {
  const std::size_t at = item.find('@');
  if (at == std::string_view::npos || check_secret_name(item.substr(0, at))) return true;
  const std::string_view place = item.substr(at + 1);
  return place.empty() || std::any_of(place.begin(), place.end(), [](char c) { return c <= 0x20 || c >= 0x7f || c == ','; });
}

std::string trace_list(RequestReader& reader, const char* key, bool (*bad_item)(std::string_view)) {
  std::string list = reader.text(key, kMaxSecrets * 200);
  std::string_view rest = list;
  while (true) {
    const std::size_t comma = rest.find(',');
    if (bad_item(rest.substr(0, comma))) refuse_key(key);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return list;
}

InspectorReport request_of(std::string_view bytes) {
  RequestReader reader(bytes);
  InspectorRequest request;
  request.id = reader.number("id");
  request.method = reader.text("method", kMaxReportedMethodBytes);
  request.rule = reader.text("rule", kMaxReportedRuleBytes);
  request.log_class = reader.text("class", 32, /*spaces=*/true);
  request.status = static_cast<std::uint16_t>(reader.number("status", 999));
  request.up = reader.number("up");
  request.down = reader.number("down");
  request.ms = reader.number("ms");
  request.report = reader.flag("report");
  if (reader.has_key("path")) request.path = reader.text("path", kMaxReportedPathBytes);
  if (reader.has_key("secret")) {
    request.secret = reader.text("secret", 32);
    if (check_secret_name(*request.secret)) refuse_key("secret");  // it stands alone as secret=NAME
  }
  // The trace: lists joined by ',' whose every item is checked, so a line's swap=, inject= and
  // scrub= carry names and nothing else (never a value, never a byte that could forge a field).
  if (reader.has_key("swap")) request.swap = trace_list(reader, "swap", &bad_swap_item);
  if (reader.has_key("inject")) request.inject = trace_list(reader, "inject", &bad_header_item);
  if (reader.has_key("sign")) {
    request.sign = reader.text("sign", 16);
    if (request.sign != "aws-sigv4") refuse_key("sign");  // the one signature there is
  }
  if (reader.has_key("asked")) {
    request.asked = parse_asked(reader.text("asked", 16));  // one of five words: asked= is never anything else
    if (!request.asked) refuse_key("asked");
  }
  if (reader.has_key("scrub")) request.scrub = trace_list(reader, "scrub", &bad_name_item);
  reader.end();
  return request;
}

// `bytes` as the message `of` reads (report_of, order_of), or why it is refused.
template <class Message>
std::variant<Message, std::string> checked(std::string_view bytes, Message (*of)(const Json&)) {
  try {
    return of(parse_object(bytes));
  } catch (const Refused& refused) {
    return refused.why;
  } catch (const nlohmann::json::exception&) {
    return std::string("malformed");
  }
}

// One line of JSON; bytes that are not UTF-8 are replaced, never thrown on.
std::string one_line(const Json& message) {
  return message.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::variant<InspectorReport, std::string> parse_inspector_report(std::string_view bytes) {
  if (bytes.starts_with(kRequestPrefix)) {
    if (bytes.size() > kMaxChannelMessageBytes) return std::string("too long");
    try {
      return request_of(bytes);
    } catch (const Refused& refused) {
      return refused.why;
    }
  }
  return checked(bytes, &report_of);
}

std::string inspector_message(const InspectorReport& report) {
  if (const auto* request = std::get_if<InspectorRequest>(&report)) return request_message(*request);
  return one_line(std::visit(ReportWriter{}, report));
}

std::string serve_message(const InspectorOrder& order) {
  if (const auto* secret = std::get_if<InspectorSecret>(&order)) return secret_message(*secret);
  return one_line(std::visit(OrderWriter{}, order));
}

std::variant<InspectorOrder, std::string> parse_serve_message(std::string_view bytes) {
  if (bytes.starts_with(kSecretPrefix)) return secret_of(bytes);
  return checked(bytes, &order_of);
}

}  // namespace boxproxy
