// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/openssl_owners.h"

#include <openssl/crypto.h>
#include <openssl/err.h>

namespace boxproxy {

namespace {

// Entries of the error queue put in a message: the first ones say what failed; the rest are the
// frames that passed it up, which make a log line long and say nothing more to an operator.
constexpr int kErrorEntriesShown = 3;

}  // namespace

SecureBytes::SecureBytes(std::size_t size) noexcept
    : data_(static_cast<unsigned char*>(OPENSSL_secure_malloc(size))), size_(data_ ? size : 0) {}

SecureBytes::~SecureBytes() {
  if (data_) OPENSSL_secure_clear_free(data_, size_);
}

std::string take_openssl_errors() {
  std::string text;
  int shown = 0;
  for (unsigned long code = ERR_get_error(); code != 0; code = ERR_get_error()) {
    if (shown++ >= kErrorEntriesShown) continue;  // drained all the same
    char entry[256];
    ERR_error_string_n(code, entry, sizeof entry);
    if (!text.empty()) text += "; ";
    text += entry;
  }
  return text.empty() ? "no detail" : text;
}

std::string openssl_failure(std::string_view what) {
  std::string text(what);
  text += ": ";
  text += take_openssl_errors();
  return text;
}

}  // namespace boxproxy
