// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/key_heap.h"

#include <openssl/crypto.h>

namespace boxproxy {

namespace {

KeyHeap make_key_heap() noexcept {
  // 1: all done; 2: made, but mlock or madvise failed; 0: none (see KeyHeap).
  switch (CRYPTO_secure_malloc_init(kKeyHeapBytes, kKeyHeapMinimumBlock)) {
    case 1:
      return KeyHeap::protected_heap;
    case 2:
      return KeyHeap::partly_protected;
    default:
      return KeyHeap::ordinary_heap;
  }
}

}  // namespace

KeyHeap start_key_heap() noexcept {
  // CRYPTO_secure_malloc_init answers 0 when the heap exists already, so the first answer is kept.
  static const KeyHeap first = make_key_heap();
  return first;
}

}  // namespace boxproxy
