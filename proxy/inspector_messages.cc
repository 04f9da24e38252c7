// SPDX-License-Identifier: Apache-2.0
// The messages between serve and its inspector (proxy/inspector_messages.h).
#include "proxy/inspector_messages.h"

#include <nlohmann/json.hpp>

#include <limits>

#include "proxy/fd_channel.h"
#include "proxy/inspector_request_line.h"
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

// What the inspector reports is logged: reported_text_ok's bytes only (inspector_request_line.h).
void check_text(std::string_view s, const char* key, std::size_t most, bool spaces) {
  if (!reported_text_ok(s, most, spaces)) refuse_key(key);
}

std::string text(const Json& object, const char* key, std::size_t most, bool spaces = false) {
  const Json& value = field(object, key);
  if (!value.is_string()) refuse_key(key);
  const auto& s = value.get_ref<const std::string&>();
  check_text(s, key, most, spaces);
  return s;
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
  // A request line comes only in its one shape (inspector_request_line.cc): a message of another shape
  // naming it is not read a second way.
  if (op == "request") refuse("request not in its shape");
  if (op == "dial") return InspectorDial{id_of(message)};
  if (op == "unpooled") return InspectorUnpooled{id_of(message)};
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
    // Typed once, here: serve never matches an end or a class as text after this. A word of no
    // vocabulary is refused, never logged as another.
    const auto end = tunnel_end_from_name(text(message, "end", 32));
    if (!end) refuse_key("end");
    ended.end = *end;
    if (message.contains("class")) {
      ended.refusal = reason_from_log_class(text(message, "class", kMaxReportedClassBytes, /*spaces=*/true));
      if (!ended.refusal) refuse_key("class");  // "ok" too: the class of an end is a refusal's
    }
    if (message.contains("tls")) {
      ended.tls = tls_failure_from_name(text(message, "tls", 32));
      if (!ended.tls) refuse_key("tls");  // a word of the vocabulary, or nothing goes on the line
    }
    // Only true is written; false (or anything else) is a message no inspector sends.
    if (message.contains("pooled") && !flag(message, "pooled")) refuse_key("pooled");
    ended.pooled = message.contains("pooled");
    // A refused connection never keeps its origin connection (inspected_ends.cc): both at once is
    // an inspector gone wrong, whose slot accounting serve must not follow (found in review).
    if (ended.pooled && ended.refusal) refuse_key("pooled");
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
    if (message.contains("pooled")) connection.pooled = number(message, "pooled");
    return connection;
  }
  if (op == "evict") return InspectorEvict{id_of(message)};
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
  Json operator()(const InspectorRequest&) const { return nullptr; }  // written by write_request_line
  Json operator()(const InspectorDial& dial) const { return {{"op", "dial"}, {"id", dial.id}}; }
  Json operator()(const InspectorUnpooled& unpooled) const { return {{"op", "unpooled"}, {"id", unpooled.id}}; }
  Json operator()(const InspectorAsk& ask) const {
    return {{"op", "ask"},          {"id", ask.id},       {"n", ask.n},      {"method", ask.method},
            {"path", ask.path}, {"query", ask.query}, {"rule", ask.rule}};
  }
  Json operator()(const InspectorEnded& ended) const {
    Json out = {{"op", "ended"},
                {"id", ended.id},
                {"up", ended.up},
                {"down", ended.down},
                {"end", std::string(tunnel_end_name(ended.end))}};
    if (ended.refusal) out["class"] = std::string(log_class(*ended.refusal));
    if (ended.tls) out["tls"] = std::string(tls_failure_name(*ended.tls));
    if (ended.pooled) out["pooled"] = true;
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
    Json json = {{"op", "connection"}, {"id", connection.id}, {"host", connection.host}, {"port", connection.port},
                 {"endpoint", connection.endpoint}};
    if (connection.pooled) json["pooled"] = *connection.pooled;
    return json;
  }
  Json operator()(const InspectorEvict& evict) const { return {{"op", "evict"}, {"id", evict.id}}; }
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
  if (bytes.starts_with(kRequestLinePrefix)) {
    if (bytes.size() > kMaxChannelMessageBytes) return std::string("too long");
    auto request = read_request_line(bytes);
    if (auto* why = std::get_if<std::string>(&request)) return std::move(*why);
    return std::get<InspectorRequest>(std::move(request));
  }
  return checked(bytes, &report_of);
}

std::string inspector_message(const InspectorRequest& request) { return write_request_line(request); }

std::string inspector_message(const InspectorReport& report) {
  if (const auto* request = std::get_if<InspectorRequest>(&report)) return write_request_line(*request);
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
