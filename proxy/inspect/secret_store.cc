// SPDX-License-Identifier: Apache-2.0
// The session's secrets in the inspector (proxy/inspect/secret_store.h).
#include "proxy/inspect/secret_store.h"

#include <string.h>  // explicit_bzero
#include <sys/mman.h>

#include <cstring>
#include <stdexcept>

namespace boxproxy {

SecretStore::SecretStore() : arena_bytes_(kMaxSecrets * kMaxSecretValueBytes), slots_(kMaxSecrets) {
  void* arena = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) throw std::runtime_error("cannot map the secrets' memory");
  arena_ = static_cast<char*>(arena);
  // Out of core files whatever the process's dumpable flag says (a debugger may set it back).
  // Fail closed: a store whose pages could reach a core file is not made.
  if (::madvise(arena_, arena_bytes_, MADV_DONTDUMP) == -1) {
    ::munmap(arena_, arena_bytes_);
    throw std::runtime_error("cannot keep the secrets' memory out of core files (madvise)");
  }
  // Never swapped out, where the memory-lock limit allows (only the pages touched are locked,
  // MLOCK_ONFAULT): a value on a swap device outlives the session. Best effort, as the key heap's
  // lock is (proxy/inspect/key_heap.h); the arena is at most 256 KiB.
  locked_ = ::mlock2(arena_, arena_bytes_, MLOCK_ONFAULT) == 0;
}

SecretStore::~SecretStore() {
  // The values in use (free slots were overwritten when they were freed): touching the whole
  // arena would make every page of it resident on the way out. munmap unlocks it too (munlock
  // is not among the calls the confined inspector may make).
  for (std::size_t i = 0; i < slots_.size(); ++i) ::explicit_bzero(bytes_of(i), slots_[i].length);
  ::munmap(arena_, arena_bytes_);
}

char* SecretStore::bytes_of(std::size_t slot) const noexcept { return arena_ + slot * kMaxSecretValueBytes; }

bool SecretStore::set(std::string_view name, std::string_view value) {
  if (name.empty() || value.size() > kMaxSecretValueBytes) return false;
  std::size_t free = slots_.size();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].name == name) {
      free = i;
      break;
    }
    if (slots_[i].name.empty() && free == slots_.size()) free = i;
  }
  if (free == slots_.size()) return false;
  Slot& slot = slots_[free];
  // The old value overwritten whole before the new one is written: a shorter new value must not
  // leave the old one's tail behind it.
  ::explicit_bzero(bytes_of(free), slot.length);
  std::memcpy(bytes_of(free), value.data(), value.size());
  slot.length = value.size();
  if (slot.name.empty()) slot.name.assign(name);
  ++generation_;
  return true;
}

void SecretStore::revoke(std::string_view name) noexcept {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.name != name) continue;
    ::explicit_bzero(bytes_of(i), slot.length);
    slot = Slot{};
    ++generation_;
    return;
  }
}

std::optional<std::string_view> SecretStore::secret(std::string_view name) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].name.empty() && slots_[i].name == name) return std::string_view(bytes_of(i), slots_[i].length);
  }
  return std::nullopt;
}

std::vector<std::string> SecretStore::names() const {
  std::vector<std::string> out;
  for (const Slot& slot : slots_) {
    if (!slot.name.empty()) out.push_back(slot.name);
  }
  return out;
}

std::size_t SecretStore::size() const noexcept {
  std::size_t n = 0;
  for (const Slot& slot : slots_) n += slot.name.empty() ? 0 : 1;
  return n;
}

}  // namespace boxproxy
