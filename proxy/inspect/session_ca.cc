// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/session_ca.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace boxproxy {

namespace {

// The most characters an X.520 commonName may have (RFC 5280's ub-common-name).
constexpr std::size_t kMaxCommonName = 64;

[[noreturn]] void fail(std::string_view what) { throw std::runtime_error(openssl_failure(what)); }

// "FILE: what", for an error in one of the operator's files; OpenSSL's reason appended when it has one.
[[noreturn]] void fail_file(const std::string& file, std::string_view what, bool with_openssl_reason = false) {
  std::string text = file + ": ";
  text += what;
  if (with_openssl_reason) {
    text += " (" + take_openssl_errors() + ")";
  } else {
    (void)take_openssl_errors();  // an old error must not explain a later failure
  }
  throw std::runtime_error(text);
}

std::string common_name(std::string_view label) {
  if (label.empty()) throw std::invalid_argument("the session CA's label is empty");
  for (char c : label) {
    if (c < 0x20 || c > 0x7e) throw std::invalid_argument("the session CA's label is not printable ASCII");
  }
  std::string name = "boxproxy ";
  name += label;
  if (name.size() > kMaxCommonName) name.resize(kMaxCommonName);  // ASCII: never cuts a character
  return name;
}

// A file descriptor closed when it goes out of scope (this file's reads only). O_NONBLOCK: a FIFO
// given as a path opens at once (and is then refused as not a regular file) instead of holding
// the start until something writes to it; on a regular file it changes nothing.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) {
    if (fd_ == -1) fail_file(path, std::string("cannot open it: ") + std::strerror(errno));
  }
  ~ReadOnlyFile() { ::close(fd_); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  // Its size, refused past `most` (so that a wrong path, /dev/zero say, cannot make us read forever).
  std::size_t size_at_most(const std::string& path, std::size_t most) const {
    struct stat status {};
    if (::fstat(fd_, &status) == -1) fail_file(path, std::string("cannot read it: ") + std::strerror(errno));
    if (!S_ISREG(status.st_mode)) fail_file(path, "is not a regular file");
    if (static_cast<std::size_t>(status.st_size) > most) {
      fail_file(path, "is larger than " + std::to_string(most) + " bytes, too large for what it should hold");
    }
    return static_cast<std::size_t>(status.st_size);
  }

  // Reads exactly `size` bytes into `into` (a file that shrinks meanwhile is an error).
  void read_all(const std::string& path, unsigned char* into, std::size_t size) const {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t got = ::read(fd_, into + done, size - done);
      if (got == -1 && errno == EINTR) continue;
      if (got == -1) fail_file(path, std::string("cannot read it: ") + std::strerror(errno));
      if (got == 0) fail_file(path, "changed while it was read");
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  int fd_;
};

X509Ptr read_certificate(const std::string& path) {
  ReadOnlyFile file(path);
  std::string text(file.size_at_most(path, kMaxCertFileBytes), '\0');
  file.read_all(path, reinterpret_cast<unsigned char*>(text.data()), text.size());
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) fail("cannot read a certificate");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) fail_file(path, "holds no PEM certificate", true);
  return cert;
}

// OpenSSL's passphrase callback: none is given. Without it OpenSSL would prompt on the terminal,
// which a daemon must never do; an encrypted key fails to load instead, and the error says so.
int no_passphrase(char*, int, int, void*) { return -1; }

EvpPkeyPtr read_private_key(const std::string& path) {
  ReadOnlyFile file(path);
  const std::size_t size = file.size_at_most(path, kMaxKeyFileBytes);
  // The key's text goes to the secure heap, never to the ordinary one (where freed memory keeps it
  // for anyone who later reads the heap, or a core file); it is zeroed when freed.
  SecureBytes text(size == 0 ? 1 : size);
  if (text.data() == nullptr) fail("no room in the secure heap for the CA's key file");
  file.read_all(path, text.data(), size);
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(size)));
  if (!bio) fail("cannot read a private key");
  EvpPkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) fail_file(path, "holds no PEM private key that can be read without a passphrase", true);
  return key;
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) fail("cannot write the CA's certificate as PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  if (size <= 0 || data == nullptr) fail("cannot write the CA's certificate as PEM");
  return std::string(data, static_cast<std::size_t>(size));
}

// "2025-01-31T12:00:00Z".
std::string utc_text(CertTime when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm fields{};
  char text[32];
  if (gmtime_r(&seconds, &fields) == nullptr || std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &fields) == 0) {
    return "?";
  }
  return text;
}

CertTime time_or_fail(const ASN1_TIME* time) {
  const auto when = cert_time(time);
  if (!when) fail("cannot read the CA's validity");
  return *when;
}

}  // namespace

SessionCa::SessionCa(X509Ptr cert, EvpPkeyPtr key, KeyHeap heap)
    : cert_(std::move(cert)),
      key_(std::move(key)),
      pem_(pem_of(cert_.get())),
      not_before_(time_or_fail(X509_get0_notBefore(cert_.get()))),
      not_after_(time_or_fail(X509_get0_notAfter(cert_.get()))),
      heap_(heap) {}

SessionCa SessionCa::generate(std::string_view label, CertTime start) {
  const std::string name_text = common_name(label);
  ERR_clear_error();  // a failure's message is this CA's reason, nothing older
  const KeyHeap heap = start_key_heap();  // before the key, so the key is made in it
  EvpPkeyPtr key = make_p256_key();
  if (!key) fail("cannot make the session CA's key");

  X509Ptr cert(X509_new());
  if (!cert || !set_version_and_serial(cert.get())) fail("cannot make the session CA's certificate");
  const CertTime not_before = start - kCaBackdate;
  if (!set_validity(cert.get(), not_before, not_before + kCaLifetime)) fail("cannot set the session CA's validity");

  X509NamePtr name(X509_NAME_new());
  if (!name ||
      X509_NAME_add_entry_by_NID(name.get(), NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(name_text.data()),
                                 static_cast<int>(name_text.size()), -1, 0) != 1 ||
      X509_set_subject_name(cert.get(), name.get()) != 1 || X509_set_issuer_name(cert.get(), name.get()) != 1) {
    fail("cannot name the session CA");
  }
  if (X509_set_pubkey(cert.get(), key.get()) != 1) fail("cannot set the session CA's key");

  // pathlen 0: a certificate this CA signs can never sign another, so a leaf's key (which TLS
  // handshakes use, and which a process bug is likelier to expose) cannot become a CA.
  // keyCertSign and cRLSign only: the CA key signs certificates, never a TLS handshake.
  if (!add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash")) {
    fail("cannot set the session CA's extensions");
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) fail("cannot sign the session CA's certificate");
  return SessionCa(std::move(cert), std::move(key), heap);
}

SessionCa SessionCa::load(const std::string& cert_file, const std::string& key_file, CertTime now) {
  ERR_clear_error();  // a failure's message is this CA's reason, nothing older
  const KeyHeap heap = start_key_heap();  // before the key is read, so it is read into it
  X509Ptr cert = read_certificate(cert_file);
  EvpPkeyPtr key = read_private_key(key_file);

  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    fail_file(key_file, "is not the private key of the certificate in " + cert_file);
  }
  // A certificate that is not a CA would sign leaves that no client accepts: refused at start,
  // rather than failing every handshake of the session. keyUsage first (X509_check_ca refuses a
  // CA without keyCertSign too, and the message should say which); then X509_check_ca's 1 is
  // basicConstraints CA:TRUE: its other answers (a v1 self-signed certificate, a Netscape cert
  // type) name CAs that no current client accepts.
  if ((X509_get_key_usage(cert.get()) & KU_KEY_CERT_SIGN) == 0) {
    fail_file(cert_file, "is a certificate whose keyUsage does not allow signing certificates (keyCertSign)");
  }
  if (X509_check_ca(cert.get()) != 1) {
    fail_file(cert_file, "is not a CA certificate (it has no basicConstraints CA:TRUE)");
  }
  SessionCa ca(std::move(cert), std::move(key), heap);
  if (now < ca.not_before_ || now >= ca.not_after_) {
    fail_file(cert_file, "is not valid now: it is valid from " + utc_text(ca.not_before_) + " to " +
                             utc_text(ca.not_after_));
  }
  ERR_clear_error();  // OpenSSL's decoders may leave what they tried and gave up on
  return ca;
}

bool SessionCa::sign(X509* cert) const noexcept {
  // Ed25519 and Ed448 sign the message itself, with no separate digest; every other key SHA-256.
  const bool pure_signature = EVP_PKEY_is_a(key_.get(), "ED25519") == 1 || EVP_PKEY_is_a(key_.get(), "ED448") == 1;
  return X509_sign(cert, key_.get(), pure_signature ? nullptr : EVP_sha256()) > 0;
}

}  // namespace boxproxy
