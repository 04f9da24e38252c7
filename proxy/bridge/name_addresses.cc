// SPDX-License-Identifier: Apache-2.0
#include "proxy/bridge/name_addresses.h"

#include <array>

namespace boxproxy {
namespace {

// 198.18.0.0/15 in host order, and its size.
constexpr std::uint32_t kV4Base = (198u << 24) | (18u << 16);
constexpr std::uint32_t kV4Size = 1u << 17;
// fd62:6f78:7072::/96: the first 12 bytes; the last 4 hold the index.
constexpr std::array<std::uint8_t, 12> kV6Prefix = {0xfd, 0x62, 0x6f, 0x78, 0x70, 0x72, 0, 0, 0, 0, 0, 0};

}  // namespace

NameAddresses::NameAddresses(std::size_t max_names)
    : max_names_(max_names < 1 ? 1 : (max_names > kV4Size - 1 ? kV4Size - 1 : max_names)) {
  // Index 0 is never given out. The table grows as indices are (they are handed out in order), not
  // at start: all of it at once was 128 KiB of the bridge's private memory in every box and pod,
  // most of which never hold more than a few names.
  by_index_.push_back(order_.end());
}

IpAddress NameAddresses::address_of(std::uint32_t index, IpAddress::Family family) {
  if (family == IpAddress::Family::v4) return IpAddress::v4(kV4Base + index);
  std::array<std::uint8_t, 16> bytes{};
  std::copy(kV6Prefix.begin(), kV6Prefix.end(), bytes.begin());
  bytes[12] = static_cast<std::uint8_t>(index >> 24);
  bytes[13] = static_cast<std::uint8_t>(index >> 16);
  bytes[14] = static_cast<std::uint8_t>(index >> 8);
  bytes[15] = static_cast<std::uint8_t>(index);
  return IpAddress::v6(bytes);
}

std::optional<std::uint32_t> NameAddresses::index_of(const IpAddress& address) noexcept {
  if (address.is_v4()) {
    const std::uint32_t value = address.v4_value();
    if (value < kV4Base || value >= kV4Base + kV4Size) return std::nullopt;
    return value - kV4Base;
  }
  if (!std::equal(kV6Prefix.begin(), kV6Prefix.end(), address.bytes.begin())) return std::nullopt;
  const std::uint32_t index = (std::uint32_t{address.bytes[12]} << 24) | (std::uint32_t{address.bytes[13]} << 16) |
                              (std::uint32_t{address.bytes[14]} << 8) | address.bytes[15];
  if (index >= kV4Size) return std::nullopt;
  return index;
}

bool NameAddresses::in_range(const IpAddress& address) noexcept { return index_of(address).has_value(); }

void NameAddresses::touch(Order::iterator entry) { order_.splice(order_.begin(), order_, entry); }

IpAddress NameAddresses::address_for(std::string_view name, IpAddress::Family family) {
  const std::string key(name);
  if (const auto found = by_name_.find(key); found != by_name_.end()) {
    touch(found->second);
    return address_of(found->second->index, family);
  }
  std::uint32_t index = 0;
  if (next_index_ <= max_names_) {
    by_index_.push_back(order_.end());  // first: should it throw, the table and the count still agree
    index = next_index_++;              // by_index_.size() == next_index_
  } else {
    // Full: the least recently used name gives up its address.
    const auto oldest = std::prev(order_.end());
    index = oldest->index;
    by_name_.erase(oldest->name);
    order_.erase(oldest);
  }
  order_.push_front(Entry{key, index});
  by_name_.emplace(key, order_.begin());
  by_index_[index] = order_.begin();
  return address_of(index, family);
}

std::optional<std::string> NameAddresses::name_for(const IpAddress& address) {
  const auto index = index_of(address);
  if (!index || *index >= by_index_.size() || *index == 0 || *index >= next_index_) return std::nullopt;
  const auto entry = by_index_[*index];
  if (entry == order_.end()) return std::nullopt;
  touch(entry);
  return entry->name;
}

}  // namespace boxproxy
