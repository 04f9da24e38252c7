// SPDX-License-Identifier: Apache-2.0
// The spellings of a secret's value (SPEC §19a, "Responses are scrubbed"): every way an origin, or
// a box through an echoing origin, commonly writes a value it was given, so that the response
// scrubber (proxy/wire/response_scrubber.h) can look for each. Pure.
//
// For a value V (visible ASCII, table/secret_value.h):
//   - raw: V itself;
//   - when V has a byte outside letters, digits and "-._~" (otherwise these are V again):
//     percent-encoded, every such byte as %XX, upper- and lower-case hex; encodeURIComponent's
//     form too (which leaves !'()* as they are); JSON-escaped (\" and \\; with \/ as well; and
//     with <, > and & as \u003c \u003e \u0026, as Go writes them); HTML-escaped (&amp; &lt; &gt;
//     &quot; with ' as &#39;, &#x27; or left as is);
//   - hex, lower- and upper-case;
//   - base64, standard and URL alphabets, at each of the three alignments: V's bytes may sit at
//     any offset of a longer text that is encoded as a whole (a `Basic` credential "user:V", a
//     JSON blob), so what is searched for is the interior of that encoding, the characters that
//     depend only on V's bytes (base64_interior).
// Duplicates are dropped (a value of letters and digits has no percent, JSON or HTML spelling of
// its own; a base64 without '+' or '/' is the same in both alphabets).
//
// Every spelling is visible ASCII (0x21 to 0x7e): what lets the scrubber hold back only a trailing
// run of such bytes (response_scrubber.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "table/base64.h"
#include "table/secret_value.h"

namespace boxproxy {

// Every spelling of `value` (above), each once, raw first. Each is a SecretText: it is as good as
// the value to whoever reads it, and is overwritten when it goes.
[[nodiscard]] std::vector<SecretText> secret_spellings(std::string_view value);

// The characters of the base64 of (`filler` bytes of anything, then `value`) that depend only on
// `value`: the encoding's first ceil(8*filler/6) characters (which carry filler bits) and its last
// partial character (which carries bits of whatever follows) dropped. `filler` is 0, 1 or 2. Empty
// when `value` is too short to leave any.
[[nodiscard]] std::string base64_interior(std::string_view value, std::size_t filler, Base64Alphabet alphabet);

// `value` with every byte outside letters, digits and "-._~" as %XX (upper-case hex, RFC 3986
// §2.1): how a swapped value goes into a query parameter (SPEC §19a), and a spelling above.
[[nodiscard]] std::string percent_encode_all(std::string_view value);

// The longest any spelling of a value of `length` bytes can be, whatever its bytes: six bytes for
// one (an HTML or JSON escape such as "&quot;" or "\u0026"). What the scrubber's hold is bounded
// by, so that the bound tells nothing of a value but its length.
[[nodiscard]] constexpr std::size_t longest_spelling_bound(std::size_t length) noexcept { return 6 * length; }

}  // namespace boxproxy
