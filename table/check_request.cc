// SPDX-License-Identifier: Apache-2.0
#include "table/check_request.h"

#include "table/ascii.h"
#include "table/inspect_endpoint.h"

namespace boxproxy {

bool names_request(std::string_view text) noexcept { return text.find("://") != std::string_view::npos; }

std::variant<CheckRequest, std::string> parse_check_request(std::string_view text) {
  std::size_t space = 0;
  while (space < text.size() && !is_ows(text[space])) ++space;
  const std::string_view method = text.substr(0, space);
  std::string_view url = trim_ows(text.substr(space));
  if (method.empty() || url.empty() || names_request(method)) {
    return std::string("a request is one argument, METHOD and URL: 'GET https://host/path'");
  }
  // A request line's method is a token; "*" is one too, but no request carries it.
  if (check_rule_method(method) || method == "*") {
    return std::string("does not start with an HTTP method (GET, POST, ...)");
  }
  constexpr std::string_view kScheme = "https://";
  // Only https: an inspected endpoint's requests are judged inside TLS (plain http:// goes as
  // SPEC §8 says, and check judges its host as any other target).
  if (url.size() < kScheme.size() || !iequals(url.substr(0, kScheme.size()), kScheme)) {
    return std::string("its URL is not https:// (requests are judged inside TLS)");
  }
  url.remove_prefix(kScheme.size());
  url = url.substr(0, url.find('#'));  // a fragment never leaves the client
  const std::size_t authority_end = url.find_first_of("/?");
  CheckRequest request;
  request.method = std::string(method);
  request.authority = std::string(url.substr(0, authority_end));
  const std::string_view rest = authority_end == std::string_view::npos ? std::string_view{} : url.substr(authority_end);
  // An empty path is "/" on the wire (RFC 9110 §4.2.4 for https).
  request.target = rest.empty() || rest.front() == '?' ? "/" + std::string(rest) : std::string(rest);
  return request;
}

}  // namespace boxproxy
