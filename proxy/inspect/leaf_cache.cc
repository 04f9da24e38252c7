// SPDX-License-Identifier: Apache-2.0
#include "proxy/inspect/leaf_cache.h"

#include <stdexcept>

namespace boxproxy {

namespace {

// Whether a kept leaf should be made again: past its end (it is never handed out then, even when
// its CA's end cut it short and no new one can be made), or near its end when a new one would
// last longer (a leaf cut short by its CA's end is not made again on every use of its last day).
bool due_for_renewal(const Leaf& leaf, const SessionCa& ca, CertTime now) {
  if (now >= leaf.not_after) return true;
  return leaf.not_after - now < kLeafRenewBefore && leaf.not_after < ca.not_after();
}

}  // namespace

LeafCache::LeafCache(const SessionCa& ca, std::size_t capacity)
    : ca_(ca), capacity_(capacity == 0 ? 1 : capacity), key_(make_p256_key()) {
  if (!key_) throw std::runtime_error(openssl_failure("cannot make the leaves' key"));
}

LeafOrError LeafCache::leaf_for(std::string_view host, CertTime now) {
  const std::optional<std::string> name = leaf_host(host);
  if (!name) return make_leaf(ca_, key_.get(), host, now);  // its error says why

  if (const auto found = by_host_.find(*name); found != by_host_.end()) {
    const auto entry = found->second;
    order_.splice(order_.begin(), order_, entry);  // now the most recently used
    if (!due_for_renewal(*entry->leaf, ca_, now)) return {entry->leaf, {}};
    LeafOrError renewed = make_leaf(ca_, key_.get(), *name, now);
    if (renewed.leaf) {
      entry->leaf = renewed.leaf;
    } else if (now < entry->leaf->not_after) {
      return {entry->leaf, {}};  // not made again, but the kept one still serves
    }
    return renewed;
  }

  LeafOrError made = make_leaf(ca_, key_.get(), *name, now);
  if (!made.leaf) return made;
  if (order_.size() >= capacity_) {
    by_host_.erase(order_.back().host);
    order_.pop_back();
  }
  order_.push_front(Entry{*name, made.leaf});
  by_host_.emplace(*name, order_.begin());
  return made;
}

}  // namespace boxproxy
