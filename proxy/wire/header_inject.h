// SPDX-License-Identifier: Apache-2.0
// Credential injection (SPEC §19): an inspected endpoint's "inject" templates expanded with the
// session's secrets, and the request head the origin gets with them in place of the box's
// headers of those names. Pure: the values come through a SecretLookup (the inspector's
// SecretStore, a map in the tests), and nothing here keeps one.
//
// What it stops: a box choosing the credential an endpoint receives (every header of an injected
// name the box sent is dropped, whatever its case or count), and a request going out with an
// empty or partial credential when its secret is not set (the caller refuses it as `secret
// missing` instead: nothing is sent).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/wire/http_head.h"
#include "proxy/wire/placeholder_swap.h"  // SwappedHead, misdirected_placeholder: SPEC §19a
#include "proxy/wire/secret_lookup.h"
#include "table/inspect_endpoint.h"
#include "table/placeholder.h"
#include "table/secret_value.h"

namespace boxproxy {

// A template ("Bearer {github}") with every {NAME} replaced by its value; or, when a secret it
// names is not set, the first such NAME (and no text at all). The template is a checked one
// (check_inject_template: printable ASCII, braces only around a name).
struct Expansion {
  SecretText text;                     // when every secret is set
  std::optional<std::string> missing;  // else the first name not set
};
[[nodiscard]] Expansion expand_inject(std::string_view inject_template, const SecretLookup& secrets);

// Every "inject" header of `endpoint`, expanded: its name (as the endpoint spells it) and its
// value; or the first secret not set.
struct InjectedFields {
  std::vector<std::pair<std::string, SecretText>> fields;
  std::optional<std::string> missing;
};
[[nodiscard]] InjectedFields expand_endpoint_inject(const InspectEndpoint& endpoint, const SecretLookup& secrets);

// Whether the box's header `name` is one the endpoint injects (compared without regard to case,
// as header names are): such a header of the box's is never sent.
[[nodiscard]] bool is_injected_header(const InspectEndpoint& endpoint, std::string_view name) noexcept;

// `head` without the box's headers of an injected name: what forward_origin_form_message is given.
// The views still point into `head`'s buffer.
[[nodiscard]] RequestHead without_injected_headers(const RequestHead& head, const InspectEndpoint& endpoint);

}  // namespace boxproxy
