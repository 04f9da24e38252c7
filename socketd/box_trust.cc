// SPDX-License-Identifier: Apache-2.0
// A `boxproxy run --inspect` box trusts the session's CA: see box_trust.h.
#include "socketd/box_trust.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "proxy/unique_fd.h"
#include "socketd/java_trust_store.h"

namespace boxproxy {
namespace {

// A CA certificate in PEM is about 1 KiB; Debian's bundle about 220 KiB. Anything far larger is not
// what these files hold, and is not read into memory.
constexpr std::size_t kMaxCaBytes = 64 * 1024;
constexpr std::size_t kMaxBundleBytes = 16 * 1024 * 1024;

constexpr std::string_view kPemBegin = "-----BEGIN CERTIFICATE-----";
constexpr std::string_view kPemEnd = "-----END CERTIFICATE-----";

// The whole of the regular file `path`, at most `limit` bytes; nullopt (errno set) otherwise.
std::optional<std::string> read_file(const std::string& path, std::size_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) return std::nullopt;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return std::nullopt;
  }
  std::string data;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n == -1 && errno == EINTR) continue;
    if (n == -1) return std::nullopt;
    if (n == 0) return data;
    data.append(buffer, static_cast<std::size_t>(n));
    if (data.size() > limit) {
      errno = EFBIG;
      return std::nullopt;
    }
  }
}

// Writes `data` to a new file `path` (mode 0644: certificates are public).
bool write_new_file(const std::string& path, std::string_view data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return false;
  while (!data.empty()) {
    const ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n == -1 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ::fsync(fd.get()) == 0 || errno == EINVAL;
}

// `name` as found on PATH, resolved (no symbolic link); nullopt when it is not there.
std::optional<std::string> find_on_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (!dir.empty()) {
      const std::string candidate = fmt::format("{}/{}", dir, name);
      char buffer[PATH_MAX];
      if (::access(candidate.c_str(), X_OK) == 0 && ::realpath(candidate.c_str(), buffer) != nullptr) {
        return std::string(buffer);
      }
    }
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace

std::optional<std::string> make_trust_bundle(const std::string& ca_path, const std::string& bundle_path) {
  // Fail closed: a box that cannot be made to trust the session's CA would meet certificate errors
  // on every inspected endpoint, and a half-made bundle could trust less (or other) than it says.
  const auto ca = read_file(ca_path, kMaxCaBytes);
  if (!ca) return fmt::format("boxproxy run: cannot read the session's CA {}: {}", ca_path, std::strerror(errno));
  if (ca->find(kPemBegin) == std::string::npos || ca->find(kPemEnd) == std::string::npos) {
    return fmt::format("boxproxy run: the session's CA {} is not a PEM certificate", ca_path);
  }
  auto bundle = read_file(kSystemCaBundle, kMaxBundleBytes);
  if (!bundle) {
    return fmt::format("boxproxy run: cannot read the system's CAs {} (the box's bundle is made from them): {}",
                       kSystemCaBundle, std::strerror(errno));
  }
  if (!bundle->empty() && bundle->back() != '\n') bundle->push_back('\n');
  *bundle += *ca;
  if (bundle->back() != '\n') bundle->push_back('\n');
  if (!write_new_file(bundle_path, *bundle)) {
    return fmt::format("boxproxy run: cannot write the box's CA bundle {}: {}", bundle_path, std::strerror(errno));
  }
  return std::nullopt;
}

std::optional<std::string> make_java_trust_store(const std::string& bundle_path, const std::string& store_path,
                                                 bool* made) {
  *made = false;
  const auto java = find_on_path("java");
  if (!java) return std::nullopt;  // no JDK: nothing for Java to trust
  const auto failed = [&](std::string_view why) {
    return fmt::format("boxproxy run: cannot make Java's trust store {} ({} is on PATH): {}", store_path, *java, why);
  };
  // The box's bundle (the system's CAs, as Debian's JDK cacerts is made from them, then the
  // session's), written as a JKS store by run itself: no keytool, no JVM (java_trust_store.h).
  const auto bundle = read_file(bundle_path, kMaxBundleBytes);
  if (!bundle) return failed(fmt::format("{}: {}", bundle_path, std::strerror(errno)));
  const auto store = jks_trust_store(*bundle, kJavaStorePassword);
  if (!store) return failed(fmt::format("{} holds a certificate that is not base64 PEM", bundle_path));
  if (!write_new_file(store_path, *store)) return failed(std::strerror(errno));
  *made = true;
  return std::nullopt;
}

std::optional<std::string> mount_trust_bundle(const std::string& bundle) {
  const auto failed = [](std::string_view step) {
    return fmt::format("boxproxy run: cannot put the session's CA bundle over {} in the box: {}: {}", kSystemCaBundle,
                       step, std::strerror(errno));
  };
  // In the box's own mount namespace (private since mount_box_proc): the host's file is untouched.
  if (::mount(bundle.c_str(), kSystemCaBundle, nullptr, MS_BIND, nullptr) == -1) return failed("bind");
  // Read-only, locked so by the inner user namespace: COMMAND cannot add a CA of its own for the
  // box's other programs to trust.
  if (::mount(nullptr, kSystemCaBundle, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) == -1) {
    return failed("remount read-only");
  }
  return std::nullopt;
}

void set_trust_variables() noexcept {
  // NODE_EXTRA_CA_CERTS names the whole bundle too: Node adds its certificates to its own roots
  // (duplicates are harmless), and one path for every variable needs no second file in the box.
  for (const char* name :
       {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT"}) {
    ::setenv(name, kSystemCaBundle, 1);
  }
}

std::string java_trust_options(const std::string& store) {
  return fmt::format("-Djavax.net.ssl.trustStore={} -Djavax.net.ssl.trustStoreType=JKS "
                     "-Djavax.net.ssl.trustStorePassword={}",
                     store, kJavaStorePassword);
}

}  // namespace boxproxy
