// SPDX-License-Identifier: Apache-2.0
// Where private keys live: OpenSSL's secure heap, an arena that is locked in memory (never
// swapped out) and left out of core dumps (MADV_DONTDUMP).
//
// What it stops: the session CA's private key (proxy/inspect/session_ca.h) and the leaves' key
// (proxy/inspect/leaf_cache.h) turning up in a core file or in swap, from where someone who is not
// the proxy could read them and sign a certificate every box of the session trusts. OpenSSL puts
// a private key's numbers there (and an ECDSA signature's nonce, and the PEM text we read a key
// from: openssl_owners.h's SecureBytes) once the heap exists; it must exist before the first key.
//
// It is not the whole defence: the TLS sessions' own keys, and copies OpenSSL's decoders make while
// reading a key file, are in the ordinary heap. So the process that holds the keys must also be
// non-dumpable (prctl(PR_SET_DUMPABLE, 0): no core file at all, and no ptrace or /proc/PID/mem by
// another process of the same user); the caller (the inspecting process's main) does that.
#pragma once

namespace boxproxy {

// What the secure heap could be made into (CRYPTO_secure_malloc_init's answers).
enum class KeyHeap {
  // Locked in memory and out of core dumps: OpenSSL 3.0 in Debian 12 maps it with guard pages,
  // mlock2(MLOCK_ONFAULT) (only the pages used are resident) and madvise(MADV_DONTDUMP).
  protected_heap,
  // Made, but the mlock or the madvise failed (RLIMIT_MEMLOCK too low, say): the keys are in
  // the arena and zeroed when freed, but may reach swap or a core file; the caller says so.
  partly_protected,
  // No secure heap (an OpenSSL built without one, or the mmap failed): keys are in the ordinary
  // heap, and only the process being non-dumpable keeps them out of core files.
  ordinary_heap,
};

// The arena: 64 KiB. A P-256 private key takes 32 bytes of it (rounded to kKeyHeapMinimumBlock),
// a signature's nonce as much while it is made, an operator's RSA key a few KiB, the key file's
// text up to kMaxKeyFileBytes while it is read. Only the pages used are resident (MLOCK_ONFAULT),
// so a larger arena costs address space, not memory.
inline constexpr unsigned kKeyHeapBytes = 64 * 1024;
// The smallest block it hands out: a power of two, as OpenSSL's buddy allocator requires.
inline constexpr int kKeyHeapMinimumBlock = 32;

// Makes the secure heap, once per process (later calls return what the first one found), before
// any private key is made or read. Safe to call from the one thread that uses OpenSSL.
[[nodiscard]] KeyHeap start_key_heap() noexcept;

}  // namespace boxproxy
