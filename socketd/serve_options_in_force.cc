// SPDX-License-Identifier: Apache-2.0
// `serve --check-config`'s object (socketd/serve_options.h options_in_force): every option in
// force as the config key it is read from, in the option table's order.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proxy/inspect_array.h"
#include "socketd/serve_options.h"
#include "table/host_list.h"

namespace boxproxy {
namespace {

// Every config key's value in force, null or empty where none was given (options_in_force
// leaves those out).
nlohmann::ordered_json values_in_force(const ServeOptions& options) {
  using json = nlohmann::ordered_json;
  const auto or_null = [](const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); };
  const auto ranges = [](const std::vector<Cidr>& cidrs) {
    json out = json::array();
    for (const Cidr& cidr : cidrs) out.push_back(cidr.to_string());
    return out;
  };
  // --allow's entries alone (a JSON array even when empty: an empty --allow still turns the list
  // on); the --allow-file's follow them in the list and stay in their file.
  json allow = nullptr;
  if (options.allow_option_entries && options.proxy.policy.allow) {
    allow = json::array();
    const std::vector<HostEntry>& entries = options.proxy.policy.allow->entries();
    for (std::size_t i = 0; i < *options.allow_option_entries && i < entries.size(); ++i) {
      allow.push_back(entry_text(entries[i]));
    }
  }
  // The endpoints in force, the command line's too, each as a config object: read back, they
  // are the same endpoints (SPEC §18: the two sources are merged).
  json inspect = json::array();
  for (const InspectEndpoint& endpoint : options.proxy.policy.inspect.endpoints()) {
    inspect.push_back(inspect_object(endpoint));
  }
  json resolve = json::array();
  for (const auto& [name, answers] : options.proxy.policy.fixed_answers) {
    std::string text = name + "=";
    for (std::size_t i = 0; i < answers.size(); ++i) text += (i == 0 ? "" : ",") + answers[i].to_string();
    resolve.push_back(std::move(text));
  }
  return {
      {"socket", options.socket_path},
      {"allow", std::move(allow)},
      {"allow-file", or_null(options.allow_file)},
      {"allow-hint", options.proxy.allow_hint},
      {"permit", ranges(options.proxy.policy.rule.permit)},
      {"deny", ranges(options.proxy.policy.rule.deny)},
      {"resolve", std::move(resolve)},
      {"nameserver", options.nameservers},
      {"inspect", std::move(inspect)},
      {"max-tunnels", options.proxy.max_tunnels},
      {"max-connections", options.proxy.max_connections},
      {"max-lookups", options.max_lookups},
      {"head-timeout", options.proxy.head_timeout},
      {"dns-timeout", options.proxy.dns_timeout},
      {"connect-timeout", options.proxy.connect_timeout},
      {"idle-timeout", options.proxy.idle_timeout},
      {"max-head-bytes", options.proxy.max_head_bytes},
      {"max-held-body", options.proxy.max_held_body},
      {"log", options.log_format == LogFormat::json ? "json" : "text"},
      {"label", options.label},
      {"log-file", or_null(options.log_file)},
      {"audit", or_null(options.audit_path)},
      // The token is never shown: only whether one is required, and its file.
      {"auth-token-file", or_null(options.auth_token_file)},
      {"ready-fd", options.ready_fd ? json(*options.ready_fd) : json(nullptr)},
      {"die-with-parent", options.die_with_parent},
      {"upstream-ca", or_null(options.upstream_ca)},
      {"ca-out", or_null(options.ca_out)},
      {"ca-cert", or_null(options.ca_cert)},
      {"ca-key", or_null(options.ca_key)},
      {"log-paths", options.proxy.log_paths},
      {"no-sni-check", !options.proxy.sni_check},
      {"control-fd", options.control_fd ? json(*options.control_fd) : json(nullptr)},
      {"control-socket", or_null(options.control_socket)},
      {"ask", options.ask},
      {"ask-timeout", options.ask_timeout},
  };
}

}  // namespace

std::string options_in_force(const ServeOptions& options) {
  using json = nlohmann::ordered_json;
  json values = values_in_force(options);
  // In the table's order, so that the object reads like --help; a key with no value is left
  // out, as a config file that never set it would leave it out.
  json out = json::object();
  for (const OptionSpec& spec : serve_option_table().options()) {
    if (!spec.config_key) continue;
    const std::string key(spec.name);
    const auto value = values.find(key);
    if (value == values.end() || value->is_null()) continue;
    // An empty "allow" is a list that refuses every name; any other empty value is none given.
    const bool empty = value->is_string() ? value->get_ref<const std::string&>().empty() : value->empty();
    if (empty && key != "allow") continue;
    out[key] = std::move(*value);
  }
  // ASCII only (a path or hint may hold other bytes): nothing but printable text reaches stdout.
  return out.dump(-1, ' ', true, json::error_handler_t::replace);
}

}  // namespace boxproxy
