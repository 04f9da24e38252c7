// SPDX-License-Identifier: Apache-2.0
// A request as `boxproxy check` names one (SPEC §18): "METHOD https://host[:port]/path", one
// argument, so that the line check prints for it starts with it whole.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace boxproxy {

struct CheckRequest {
  std::string method;     // an HTTP token, as given
  std::string authority;  // host[:port] as given, for parse_authority_default_port(.., 443)
  std::string target;     // what a client would send as the request target: the path and query
                          // ("/" when the URL has no path), never the fragment (no client sends it)
};

// Whether `text` names a request rather than a host: it holds "://". A host never does, so the
// two forms of check's targets cannot be mistaken for each other.
[[nodiscard]] bool names_request(std::string_view text) noexcept;

// "METHOD https://AUTHORITY[/PATH][?QUERY][#FRAGMENT]": the method an HTTP token, then white
// space, then an https URL (the scheme in any case). The path is taken as written, unjudged: a
// bad one is for judge_request_path to find, as it would be in a real request. On error, why the
// text is not of that shape.
[[nodiscard]] std::variant<CheckRequest, std::string> parse_check_request(std::string_view text);

}  // namespace boxproxy
