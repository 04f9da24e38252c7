// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect_array.h"

#include <algorithm>
#include <array>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "table/ascii.h"
#include "table/message_text.h"

namespace boxproxy {
namespace {

constexpr std::array<std::string_view, 13> kEndpointKeys = {"host", "name",   "access",  "rules", "deny",
                                                            "mode", "inject", "secrets", "case",  "get-bodies",
                                                            "hint", "ask", "sign"};
constexpr std::array<std::string_view, 1> kSignKeys = {"aws-sigv4"};
constexpr std::array<std::string_view, 5> kSigV4Keys = {"access_key_id", "secret_access_key", "session_token",
                                                        "regions", "services"};
constexpr std::array<std::string_view, 4> kRuleKeys = {"method", "path", "name", "ask"};

// The first error found, unwinding the reader to read_inspect_array, which returns its words. It
// never leaves this file: the reader is deep (array, object, rules, rule), and an error checked
// at every level would hide what each level reads.
struct BadValue {
  std::string words;
};

// Where a value sits, for its message: `--config "c.json": key "inspect"[0].rules[1].path`.
struct Where {
  std::string text;

  [[nodiscard]] Where key(std::string_view name) const { return {fmt::format("{}.{}", text, name)}; }
  [[nodiscard]] Where item(std::size_t index) const { return {fmt::format("{}[{}]", text, index)}; }

  // "WHERE: WHY".
  [[noreturn]] void fail(std::string_view why) const { throw BadValue{fmt::format("{}: {}", text, why)}; }
  // "WHERE: "VALUE" WHY", the value quoted: a box's supervisor or a config file may hold any byte.
  [[noreturn]] void fail(std::string_view value, std::string_view why) const {
    throw BadValue{fmt::format("{}: {} {}", text, quote(value), why)};
  }
};

// A JSON value as the message shows it: compact, ASCII.
std::string shown(const nlohmann::json& value) {
  return value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

const std::string& string_at(const Where& where, const nlohmann::json& value) {
  if (!value.is_string()) where.fail(shown(value), "is not a JSON string");
  return value.get_ref<const std::string&>();
}

// A table/ parser's message starts by naming the text ("x: is a URL"); the usage error quotes
// the value itself, so that prefix goes.
std::string_view without_value(std::string_view message, std::string_view value) {
  if (message.size() > value.size() + 2 && message.starts_with(value) && message.substr(value.size(), 2) == ": ") {
    message.remove_prefix(value.size() + 2);
  }
  return message;
}

// An object's keys, each one of `known`; `what` says what the object is, for the message.
template <std::size_t N>
void check_keys(const Where& where, const nlohmann::json& object, const std::array<std::string_view, N>& known,
                std::string_view what) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string keys;
    for (const std::string_view name : known) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", name);
    where.fail(fmt::format("unknown key {} (the keys of {} are {})", quote(key), what, keys));
  }
}

// The string at `where` as `parse` (a table/ parser of one word: an access, a mode) reads it; a
// usage error quoting it when it is none of the words.
template <class Word>
Word word_at(const Where& where, const nlohmann::json& value,
             std::variant<Word, std::string> (*parse)(std::string_view)) {
  const std::string& text = string_at(where, value);
  auto parsed = parse(text);
  if (const auto* error = std::get_if<std::string>(&parsed)) where.fail(text, *error);
  return std::get<Word>(parsed);
}

bool bool_at(const Where& where, const nlohmann::json& value) {
  if (!value.is_boolean()) where.fail(shown(value), "is not true or false");
  return value.get<bool>();
}

std::string name_at(const Where& where, const nlohmann::json& value) {
  const std::string& name = string_at(where, value);
  if (auto error = check_inspect_name(name)) where.fail(name, *error);
  return name;
}

// A rule's "method": one method as a string, or a list of them ("method": ["GET", "HEAD"], as people
// write policies). Views into `value`.
std::vector<std::string_view> methods_at(const Where& where, const nlohmann::json& value) {
  if (!value.is_array()) {
    const std::string& method = string_at(where, value);
    if (auto error = check_rule_method(method)) where.fail(method, *error);
    return {method};
  }
  std::vector<std::string_view> methods;
  for (std::size_t i = 0; i < value.size() && i <= kMaxRuleMethods; ++i) {
    methods.emplace_back(string_at(where.item(i), value[i]));
  }
  if (auto error = check_rule_methods(methods)) where.fail(shown(value), *error);
  return methods;
}

InspectRule read_rule(const Where& where, const nlohmann::json& value) {
  if (!value.is_object()) where.fail(shown(value), "is not a JSON object ({\"method\": M, \"path\": GLOB})");
  check_keys(where, value, kRuleKeys, "a rule");
  for (const std::string_view required : {"method", "path"}) {
    if (!value.contains(required)) where.fail(fmt::format("has no \"{}\" (a rule needs a method and a path)", required));
  }
  const std::vector<std::string_view> methods = methods_at(where.key("method"), value.at("method"));
  const std::string& path = string_at(where.key("path"), value.at("path"));
  auto glob = PathGlob::parse(path);
  if (const auto* error = std::get_if<std::string>(&glob)) where.key("path").fail(*error);
  std::optional<std::string> name;
  if (value.contains("name")) name = name_at(where.key("name"), value.at("name"));
  auto rule = make_inspect_rule(methods, path, name);
  if (const auto* error = std::get_if<std::string>(&rule)) where.fail(*error);  // checked above: never
  InspectRule read = std::get<InspectRule>(std::move(rule));
  if (value.contains("ask")) read.ask = bool_at(where.key("ask"), value.at("ask"));
  return read;
}

// `grants`: "rules" (an entry may say "ask"); else "deny", where "ask" would mean nothing (a deny
// is never asked about) and is refused rather than read as if it held something back.
std::vector<InspectRule> read_rules(const Where& where, const nlohmann::json& value, bool grants) {
  if (!value.is_array()) where.fail(shown(value), "is not a JSON array of rules");
  std::vector<InspectRule> rules;
  for (std::size_t i = 0; i < value.size(); ++i) {
    rules.push_back(read_rule(where.item(i), value[i]));
    if (!grants && value[i].contains("ask")) where.item(i).key("ask").fail("is for \"rules\" (a deny entry is never asked about)");
  }
  return rules;
}

void read_inject(const Where& where, const nlohmann::json& value, InspectEndpoint& endpoint) {
  if (!value.is_object()) where.fail(shown(value), "is not a JSON object of header names and templates");
  for (const auto& [header, template_value] : value.items()) {
    const Where at = where.key(header);
    if (auto error = check_inject_header(header)) where.fail(header, *error);
    const std::string& text = string_at(at, template_value);
    if (auto error = check_inject_template(text)) at.fail(text, *error);
    // One header given twice in other cases: which template was meant is not a guess to make.
    for (const auto& [seen, unused] : endpoint.inject) {
      if (iequals(seen, header)) at.fail(fmt::format("names the header {} again", quote(seen)));
    }
    endpoint.inject.emplace_back(header, text);
  }
}

// SPEC §19a's object form: {"NAME": [PLACE, ...]}, each NAME with one place at least.
void read_secret_places(const Where& where, const nlohmann::json& value, InspectEndpoint& endpoint) {
  for (const auto& [name, places] : value.items()) {
    const Where at = where.key(name);
    if (auto error = check_secret_name(name)) where.fail(name, *error);
    if (!places.is_array() || places.empty()) at.fail(shown(places), "is not a JSON array of places (\"authorization\", \"header:<name>\", \"query:<param>\")");
    std::vector<SecretPlace> read;
    for (std::size_t i = 0; i < places.size(); ++i) {
      const std::string& text = string_at(at.item(i), places[i]);
      auto place = parse_secret_place(text);
      if (const auto* error = std::get_if<std::string>(&place)) at.item(i).fail(text, *error);
      if (std::find(read.begin(), read.end(), std::get<SecretPlace>(place)) != read.end()) at.item(i).fail(text, "is named twice");
      read.push_back(std::get<SecretPlace>(std::move(place)));
    }
    endpoint.secrets.push_back(name);
    endpoint.secret_places.emplace_back(name, std::move(read));
  }
}

void read_secrets(const Where& where, const nlohmann::json& value, InspectEndpoint& endpoint) {
  if (value.is_object()) return read_secret_places(where, value, endpoint);
  if (!value.is_array()) where.fail(shown(value), "is not a JSON array of secret names (or an object of names and places)");
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Where at = where.item(i);
    const std::string& name = string_at(at, value[i]);
    if (auto error = check_secret_name(name)) at.fail(name, *error);
    if (std::find(endpoint.secrets.begin(), endpoint.secrets.end(), name) != endpoint.secrets.end()) {
      at.fail(name, "is named twice");
    }
    endpoint.secrets.push_back(name);
  }
}

// "{NAME}": a secret's name in braces (the template form "inject" uses, the whole value).
std::string sign_secret_at(const Where& where, const nlohmann::json& value) {
  const std::string& text = string_at(where, value);
  const std::string_view name = std::string_view(text).substr(text.empty() ? 0 : 1, text.size() < 2 ? 0 : text.size() - 2);
  if (text.size() < 3 || text.front() != '{' || text.back() != '}' || check_secret_name(name)) {
    where.fail(text, "is not a secret's name in braces (\"{NAME}\", NAME 1 to 32 of a-z, 0-9 and '_')");
  }
  return std::string(name);
}

// "regions" and "services": 1 or more of 1 to 64 of a-z, 0-9 and '-' (how AWS names them; what the
// box's credential scope is compared with).
std::vector<std::string> scope_names_at(const Where& where, const nlohmann::json& value) {
  if (!value.is_array() || value.empty()) where.fail(shown(value), "is not a JSON array of names");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string& name = string_at(where.item(i), value[i]);
    bool good = !name.empty() && name.size() <= 64;
    for (const char c : name) good = good && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
    if (!good) where.item(i).fail(name, "is not 1 to 64 of a-z, 0-9 and '-'");
    names.push_back(name);
  }
  return names;
}

// SPEC §20: "sign": {"aws-sigv4": {"access_key_id": "{NAME}", "secret_access_key": "{NAME}",
// "session_token": "{NAME}", "regions": [...], "services": [...]}}, services required.
SignAwsSigV4 read_sign(const Where& where, const nlohmann::json& value) {
  if (!value.is_object() || !value.contains("aws-sigv4")) where.fail(shown(value), "is not {\"aws-sigv4\": {...}}");
  check_keys(where, value, kSignKeys, "\"sign\"");
  const Where at = where.key("aws-sigv4");
  const nlohmann::json& sigv4 = value.at("aws-sigv4");
  if (!sigv4.is_object()) at.fail(shown(sigv4), "is not a JSON object");
  check_keys(at, sigv4, kSigV4Keys, "\"aws-sigv4\"");
  for (const std::string_view required : {"access_key_id", "secret_access_key", "services"}) {
    if (!sigv4.contains(required)) at.fail(fmt::format("has no \"{}\" (\"services\" names what may be signed for)", required));
  }
  SignAwsSigV4 sign;
  sign.access_key_id = sign_secret_at(at.key("access_key_id"), sigv4.at("access_key_id"));
  sign.secret_access_key = sign_secret_at(at.key("secret_access_key"), sigv4.at("secret_access_key"));
  if (sigv4.contains("session_token")) sign.session_token = sign_secret_at(at.key("session_token"), sigv4.at("session_token"));
  if (sigv4.contains("regions")) sign.regions = scope_names_at(at.key("regions"), sigv4.at("regions"));
  sign.services = scope_names_at(at.key("services"), sigv4.at("services"));
  return sign;
}

nlohmann::ordered_json sign_object(const SignAwsSigV4& sign) {
  nlohmann::ordered_json sigv4 = {{"access_key_id", "{" + sign.access_key_id + "}"},
                                  {"secret_access_key", "{" + sign.secret_access_key + "}"}};
  if (sign.session_token) sigv4["session_token"] = "{" + *sign.session_token + "}";
  if (!sign.regions.empty()) sigv4["regions"] = sign.regions;
  sigv4["services"] = sign.services;
  return {{"aws-sigv4", std::move(sigv4)}};
}

InspectEndpoint read_endpoint(const Where& where, const nlohmann::json& value) {
  // Objects only (SPEC §18): a bare entry string belongs on the command line, as --inspect.
  if (!value.is_object()) {
    where.fail(shown(value), "is not a JSON object ({\"host\": ENTRY, ...}; a bare entry is --inspect's)");
  }
  check_keys(where, value, kEndpointKeys, "an inspected endpoint");
  if (!value.contains("host")) where.fail("has no \"host\" (the endpoint's host entry, name[:port] or *.name[:port])");
  const std::string& host = string_at(where.key("host"), value.at("host"));
  auto parsed = parse_inspect_entry(host);
  if (const auto* error = std::get_if<std::string>(&parsed)) where.key("host").fail(host, without_value(*error, host));
  InspectEndpoint endpoint = std::get<InspectEndpoint>(std::move(parsed));
  if (value.contains("name")) endpoint.name = name_at(where.key("name"), value.at("name"));
  if (value.contains("access")) {
    endpoint.access = word_at(where.key("access"), value.at("access"), &parse_inspect_access);
  }
  if (value.contains("rules")) endpoint.rules = read_rules(where.key("rules"), value.at("rules"), true);
  if (value.contains("deny")) endpoint.deny = read_rules(where.key("deny"), value.at("deny"), false);
  if (value.contains("mode")) endpoint.mode = word_at(where.key("mode"), value.at("mode"), &parse_inspect_mode);
  if (value.contains("inject")) read_inject(where.key("inject"), value.at("inject"), endpoint);
  if (value.contains("secrets")) read_secrets(where.key("secrets"), value.at("secrets"), endpoint);
  if (value.contains("case")) endpoint.path_case = word_at(where.key("case"), value.at("case"), &parse_path_case);
  if (value.contains("get-bodies")) endpoint.get_bodies = bool_at(where.key("get-bodies"), value.at("get-bodies"));
  if (value.contains("hint")) endpoint.hint = bool_at(where.key("hint"), value.at("hint"));
  if (value.contains("ask")) endpoint.ask = bool_at(where.key("ask"), value.at("ask"));
  if (value.contains("sign")) endpoint.sign = read_sign(where.key("sign"), value.at("sign"));
  if (auto error = check_inspect_endpoint(endpoint)) where.fail(*error);
  return endpoint;
}

nlohmann::ordered_json rule_objects(const std::vector<InspectRule>& rules) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const InspectRule& rule : rules) {
    // One method as a string, as most rules are written; a list as a list.
    nlohmann::ordered_json method = rule.methods.size() == 1 ? nlohmann::ordered_json(rule.methods.front())
                                                             : nlohmann::ordered_json(rule.methods);
    nlohmann::ordered_json object = {{"method", std::move(method)}, {"path", rule.path.text()}};
    if (rule.name) object["name"] = *rule.name;
    if (rule.ask) object["ask"] = true;
    out.push_back(std::move(object));
  }
  return out;
}

}  // namespace

std::variant<std::vector<InspectEndpoint>, std::string> read_inspect_array(std::string_view label,
                                                                           const nlohmann::json& value) {
  const Where where{std::string(label)};
  try {
    if (!value.is_array()) where.fail(shown(value), "is not a JSON array of objects");
    std::vector<InspectEndpoint> endpoints;
    for (std::size_t i = 0; i < value.size(); ++i) endpoints.push_back(read_endpoint(where.item(i), value[i]));
    return endpoints;
  } catch (BadValue& error) {
    return std::move(error.words);
  }
}

nlohmann::ordered_json inspect_object(const InspectEndpoint& endpoint) {
  nlohmann::ordered_json out = {{"host", entry_text(endpoint.host)}};
  if (endpoint.name) out["name"] = *endpoint.name;
  if (endpoint.access) out["access"] = access_text(*endpoint.access);
  if (endpoint.rules) out["rules"] = rule_objects(*endpoint.rules);
  if (!endpoint.deny.empty()) out["deny"] = rule_objects(endpoint.deny);
  out["mode"] = mode_text(endpoint.mode);
  if (!endpoint.inject.empty()) {
    nlohmann::ordered_json inject = nlohmann::ordered_json::object();
    for (const auto& [header, text] : endpoint.inject) inject[header] = text;
    out["inject"] = std::move(inject);
  }
  if (!endpoint.secret_places.empty()) {
    nlohmann::ordered_json secrets = nlohmann::ordered_json::object();
    for (const std::string& name : endpoint.secrets) {
      nlohmann::ordered_json places = nlohmann::ordered_json::array();
      for (const SecretPlace& place : secret_places_of(endpoint, name)) places.push_back(secret_place_text(place));
      secrets[name] = std::move(places);
    }
    out["secrets"] = std::move(secrets);
  } else if (!endpoint.secrets.empty()) {
    out["secrets"] = endpoint.secrets;
  }
  if (endpoint.path_case == PathCase::insensitive) out["case"] = path_case_text(endpoint.path_case);
  if (endpoint.get_bodies) out["get-bodies"] = true;
  if (endpoint.hint) out["hint"] = true;
  if (endpoint.ask) out["ask"] = true;
  if (endpoint.sign) out["sign"] = sign_object(*endpoint.sign);
  return out;
}

nlohmann::ordered_json inspect_array(const std::vector<InspectEndpoint>& endpoints) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const InspectEndpoint& endpoint : endpoints) out.push_back(inspect_object(endpoint));
  return out;
}

}  // namespace boxproxy
