// SPDX-License-Identifier: Apache-2.0
// A secret's value (SPEC §19): what one may hold, how it is carried between serve and its
// inspector, and a string that overwrites itself when it goes. Pure: where the value comes from
// (a --secret file, the control channel) and where it is kept (proxy/inspect/secret_store.h) are
// the callers'.
//
// A value is kMinSecretValueBytes to kMaxSecretValueBytes of visible ASCII (0x21 to 0x7e). Why so narrow: it is put
// into a header value as is (and, for a placeholder, into a request target), so a CR, LF or NUL
// would end the header and start another the box never wrote, any other control byte is refused
// by careful origins, a space or a tab at either end is stripped by the origin's parser (it would
// read another credential than the one set), one inside would split a request target, and bytes
// above 0x7e are read differently by different parsers. Every API key, token and password
// encoding in use (base64, hex, JWT) fits.
//
// Nothing here ever puts a value into an error message: the words say what is wrong with it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// The shortest value (SPEC §19a): responses are searched for every value in force and what matches
// is replaced, so a short value would match at random (a 4-byte one in about every 4 GiB of
// random bytes per spelling, far sooner in text) and each match would tell the box a piece of it.
// 12 bytes of even a decimal PIN is beyond chance; every API key and token in use is longer.
inline constexpr std::size_t kMinSecretValueBytes = 12;
// The longest value: a JWT with many claims is about 2 KiB; a header line of twice that is still
// far under any origin's head limit. Bounds the inspector's store too (kMaxSecrets of these).
inline constexpr std::size_t kMaxSecretValueBytes = 4096;
// The most secrets a session holds at once (--secret and the control channel together).
inline constexpr std::size_t kMaxSecrets = 64;

// nullopt when `value` may be a secret's value (above), else why not, without quoting it.
[[nodiscard]] std::optional<std::string> check_secret_value(std::string_view value);

// Overwrites every byte `text` owns (its whole capacity, with explicit_bzero, which the compiler
// may not remove), then empties it. The memory stays `text`'s.
void scrub(std::string& text) noexcept;

// A string that holds a secret: overwritten when it is destroyed, assigned over or moved from, so
// that the heap it gives back holds no copy. Not copyable: each copy is one more to account for.
// Growth is the only leak (a reallocation frees the old buffer unscrubbed): reserve first.
class SecretText {
 public:
  SecretText() = default;
  explicit SecretText(std::string_view text) { text_.assign(text); }
  // Takes `text`'s buffer (no copy made); what a short string leaves in `text` is scrubbed.
  [[nodiscard]] static SecretText adopt(std::string&& text) noexcept;
  ~SecretText() { scrub(text_); }
  SecretText(SecretText&& other) noexcept;
  SecretText& operator=(SecretText&& other) noexcept;
  SecretText(const SecretText&) = delete;
  SecretText& operator=(const SecretText&) = delete;

  [[nodiscard]] std::string_view view() const noexcept { return text_; }
  [[nodiscard]] bool empty() const noexcept { return text_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return text_.size(); }
  // The string itself, for a caller that fills it (reserve first) or hands it to an API.
  [[nodiscard]] std::string& text() noexcept { return text_; }

 private:
  std::string text_;
};

// A file's contents as a --secret value: one trailing line end ("\n" or "\r\n", what an editor or
// `echo` adds) dropped, then checked (check_secret_value). `contents` is scrubbed whatever the
// outcome. The value, or why not (never quoting it).
struct SecretOrError {
  std::optional<SecretText> value;
  std::string error;  // set when `value` is not
};
[[nodiscard]] SecretOrError secret_from_file_contents(std::string& contents);

// The value as serve sends it to its inspector: lower-case hex, so the JSON message carries no
// byte a JSON escape could change or a log of the channel could show as text.
[[nodiscard]] SecretText secret_hex(std::string_view value);
// And back: nullopt when `hex` is not an even number of hex digits or the value is not one
// (check_secret_value).
[[nodiscard]] std::optional<SecretText> secret_from_hex(std::string_view hex);

}  // namespace boxproxy
