// SPDX-License-Identifier: Apache-2.0
// How deep arrays and objects nest in a JSON text, found before it is parsed: nlohmann/json's
// parser recurses once per level, so a hostile text ("[[[[..." a megabyte long, from a config
// file or a control client) must be refused by its depth before it could exhaust the stack. Pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace boxproxy {

// The deepest nesting of `[` and `{` outside strings in `text`; counting stops as soon as it
// passes `stop_past` (the caller's limit), which is then what is returned.
[[nodiscard]] std::size_t json_nesting_depth(std::string_view text, std::size_t stop_past) noexcept;

}  // namespace boxproxy
