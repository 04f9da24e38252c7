// SPDX-License-Identifier: Apache-2.0
// Java's trust store for a `boxproxy run` box that inspects (SPEC §18), written by run itself.
//
// Why not keytool: it starts a JVM for each certificate it imports, about a second each, so a box
// with a JDK on PATH started 2.4 s late even for `-- true` (issue 37 item 10). The JKS format is a
// short, fixed layout that every JDK reads (also where PKCS#12 is the default store type), and run
// has no TLS library to write PKCS#12 with; so run writes JKS from the box's PEM bundle in
// microseconds. A JKS file ends with a SHA-1 over its password and its bytes, an integrity check
// Java makes when it is given the password (it guards nothing secret: the store holds public
// certificates, read-only in the box).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// A JKS trust store holding every certificate of `pem` (each "-----BEGIN CERTIFICATE-----" block,
// in order, under the aliases "boxproxy-1", "boxproxy-2", ...), with `password` (ASCII) for its
// integrity check. nullopt when `pem` holds no certificate or a block is not base64.
[[nodiscard]] std::optional<std::string> jks_trust_store(std::string_view pem, std::string_view password);

// SHA-1 of `data` (FIPS 180-4), the 20 bytes. For the JKS integrity check only (the format fixes it).
[[nodiscard]] std::string sha1(std::string_view data);

}  // namespace boxproxy
