// SPDX-License-Identifier: Apache-2.0
// socketd/serve_options: the --config file.
//
// The input is written to a file and read as `serve --socket x --config FILE`. Invariants: the
// only outcomes are success or a UsageError (exit 2 with a message) — never another exception,
// a crash or a hang (one known exception is tolerated until it is fixed: see below); a
// UsageError's message starts "boxproxy serve: ", holds no control character but line breaks
// (it goes to a terminal) and none of the JSON library's own words; on success every value is within its documented range and the command
// line's --socket won over the config's. The same file is read again with --check-config, where
// inspected endpoints are taken (serve alone refuses them: not built yet), and then every endpoint
// has its port and valid names, and the "inspect" array --check-config prints reads back to
// the same array.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "socketd/serve_options.h"
#include "tests/fuzz/fuzz_support.h"

using namespace boxproxy;

namespace {

std::string config_path() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/boxproxy-fuzz-config-" +
                     std::to_string(::getpid()) + ".json";
  return path;
}

void write_file(const std::string& path, std::string_view text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(file != nullptr);
  FUZZ_CHECK(std::fwrite(text.data(), 1, text.size(), file) == text.size());
  FUZZ_CHECK(std::fclose(file) == 0);
}

// `--check-config --config PATH`: the options, or nullopt on a usage error.
std::optional<ServeOptions> check_config(const std::string& path) {
  std::string args[] = {"--check-config", "--config", path};
  char* argv[] = {args[0].data(), args[1].data(), args[2].data(), nullptr};
  try {
    return parse_serve_options(3, argv);
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

// The endpoints of a config --check-config takes, and the round trip of their printed array.
void check_endpoints(const std::string& path) {
  const std::optional<ServeOptions> options = check_config(path);
  if (!options || options->proxy.policy.inspect.empty()) return;
  for (const InspectEndpoint& endpoint : options->proxy.policy.inspect.endpoints()) {
    FUZZ_CHECK(endpoint.host.port.has_value() && is_valid_name(endpoint.host.name));
    FUZZ_CHECK(!(endpoint.access && endpoint.rules));
    if (endpoint.name) FUZZ_CHECK(!check_inspect_name(*endpoint.name).has_value());
  }
  const nlohmann::json printed = nlohmann::json::parse(options_in_force(*options));
  const std::string again_path = path + ".inspect";
  write_file(again_path, nlohmann::json{{"inspect", printed.at("inspect")}}.dump());
  const std::optional<ServeOptions> again = check_config(again_path);
  FUZZ_CHECK(again.has_value());
  FUZZ_CHECK(nlohmann::json::parse(options_in_force(*again)).at("inspect") == printed.at("inspect"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = config_path();
  write_file(path, fuzz::as_text(data, size));

  std::string args[] = {"--socket", "x", "--config", path};
  char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), nullptr};
  check_endpoints(path);
  try {
    const ServeOptions options = parse_serve_options(4, argv);
    // Every endpoint serve takes has a port (443 when none was named): its inspector is told
    // exactly which connections to take.
    for (const auto& endpoint : options.proxy.policy.inspect.endpoints()) FUZZ_CHECK(endpoint.host.port.has_value());
    FUZZ_CHECK(options.socket_path == "x");
    FUZZ_CHECK(options.proxy.max_tunnels >= 1 && options.proxy.max_tunnels <= 1'000'000);
    FUZZ_CHECK(options.proxy.max_connections >= 1);
    FUZZ_CHECK(options.proxy.max_head_bytes >= 1024 && options.proxy.max_head_bytes <= 1'048'576);
    for (const double s : {options.proxy.head_timeout, options.proxy.dns_timeout, options.proxy.connect_timeout}) {
      FUZZ_CHECK(s > 0 && s <= 86'400);
    }
    FUZZ_CHECK(options.proxy.idle_timeout >= 0 && options.proxy.idle_timeout <= 86'400);
    for (const char c : options.proxy.allow_hint) FUZZ_CHECK(c >= 0x20 && c <= 0x7e);
    if (options.proxy.policy.allow) {
      for (const auto& entry : options.proxy.policy.allow->entries()) FUZZ_CHECK(is_valid_name(entry.name));
    }
  } catch (const UsageError& error) {
    FUZZ_CHECK(error.message.starts_with("boxproxy serve: "));
    // Not JSON: said in our words, never the JSON library's (issue 11 item 4), whose messages
    // name its classes. (A key or value of the input may hold any words: only the part that
    // follows "is not JSON: " is ours alone.)
    const std::string not_json = "boxproxy serve: --config: \"" + path + "\" is not JSON: ";
    if (error.message.starts_with(not_json)) {
      const std::string_view words = std::string_view(error.message).substr(not_json.size());
      FUZZ_CHECK(words.find("json.exception") == std::string_view::npos);
      FUZZ_CHECK(words.find("last read") == std::string_view::npos);
      FUZZ_CHECK(words.find("parse error") == std::string_view::npos);
    }
    // Nothing outside printable ASCII reaches the terminal (quote() escapes even the JSON
    // library's own messages, which quote the bytes they read as they are).
    for (const char c : error.message) {
      const auto byte = static_cast<unsigned char>(c);
      FUZZ_CHECK(byte == '\n' || (byte >= 0x20 && byte <= 0x7e));
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "unexpected exception: %s\n", error.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "unexpected exception of another type\n");
    std::abort();
  }
  return 0;
}
