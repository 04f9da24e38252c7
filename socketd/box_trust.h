// SPDX-License-Identifier: Apache-2.0
// A `boxproxy run --inspect` box trusts the session's CA (SPEC §18): run makes a bundle of the
// system's CAs and the session's in its private directory; pid 1 binds it over the system's
// bundle in the box's mount namespace only; COMMAND's variables point at it.
// Every function returns a complete error message for standard error, or nullopt.
#pragma once

#include <optional>
#include <string>

namespace boxproxy {

// The system's CA bundle: replaced inside the box, never on the host. The variables name this
// path, which is the box's view of the bundle.
inline constexpr const char* kSystemCaBundle = "/etc/ssl/certs/ca-certificates.crt";

// What run made for the box to trust the session's CA, in its private directory (0700, visible
// in the box read-only, under protect_proxy_paths's bind of it).
struct BoxTrust {
  std::string bundle;                     // the system's CAs, then the session's (PEM, 0644)
  std::optional<std::string> java_store;  // with a JDK present: a JKS trust store of the same
};

// In run, once serve has written its CA to `ca_path`: writes the bundle to `bundle_path` (which
// must not exist). Fails when the CA is missing or not a PEM certificate, when the system's bundle
// cannot be read, or when the bundle cannot be written: the box would not trust what it meets.
[[nodiscard]] std::optional<std::string> make_trust_bundle(const std::string& ca_path, const std::string& bundle_path);

// In run, with a JDK present (`java` on PATH): a JKS trust store at `store_path` holding every
// certificate of the bundle at `bundle_path` (make_trust_bundle's), written by run itself in
// microseconds (java_trust_store.h; keytool took 2.4 s). nullopt in *made when there is no JDK
// (nothing to do); an error when the bundle cannot be read or the store written.
[[nodiscard]] std::optional<std::string> make_java_trust_store(const std::string& bundle_path,
                                                               const std::string& store_path, bool* made);

// The trust store's password: JKS checks its integrity with it, and Java must be told it. It
// protects nothing (the store holds public certificates, read-only in the box): no secret.
inline constexpr const char* kJavaStorePassword = "boxproxy";

// In pid 1, after mount_box_proc: `bundle` read-only over kSystemCaBundle (a symbolic link there
// is followed), in the box's mount namespace only; the inner user namespace then locks it.
[[nodiscard]] std::optional<std::string> mount_trust_bundle(const std::string& bundle);

// In COMMAND before exec: SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS,
// GIT_SSL_CAINFO and PIP_CERT name kSystemCaBundle.
void set_trust_variables() noexcept;

// The JAVA_TOOL_OPTIONS properties that make `store` Java's trust store.
[[nodiscard]] std::string java_trust_options(const std::string& store);

}  // namespace boxproxy
