// SPDX-License-Identifier: Apache-2.0
// Base64 (RFC 4648 §4 and §5), both alphabets, for what SPEC §19a reads and writes: the `Basic`
// credential a placeholder is swapped inside (decoded, swapped, encoded again), the spellings a
// secret's value takes in a response (table/secret_spellings.h), and the tripwire's look inside a
// value that is base64 of text (table/placeholder.h). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

enum class Base64Alphabet : bool {
  standard,  // '+' and '/' (RFC 4648 §4; HTTP Basic, MIME, JSON blobs)
  url,       // '-' and '_' (RFC 4648 §5; JWTs, URL parameters)
};

// `bytes` encoded; with `padding`, '=' up to a multiple of four characters.
[[nodiscard]] std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, bool padding);

// Whether `c` is a character of either alphabet (not '=').
[[nodiscard]] bool is_base64_char(char c) noexcept;

// `text` decoded, read leniently, as an origin or a box might write it: either alphabet (or the
// two mixed), '=' padding optional but only at the end. nullopt when it is not base64: a byte
// outside both alphabets, a length that leaves a lone character (4n+1), or '=' inside.
// Leniency here is on purpose: the tripwire must see through every spelling a decoder accepts.
[[nodiscard]] std::optional<std::string> base64_decode_lenient(std::string_view text);

// The strict standard form a `Basic` credential takes (RFC 7617: the standard alphabet, padded):
// nullopt for anything else. What the swap decodes before putting a value in, so that what it
// encodes again is what the origin would have decoded.
[[nodiscard]] std::optional<std::string> base64_decode_standard(std::string_view text);

}  // namespace boxproxy
