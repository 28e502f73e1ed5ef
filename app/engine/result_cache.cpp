// LRU result cache with a byte budget (see result_cache.h).
#include "result_cache.h"

#include <algorithm>

namespace vidgraph::engine {

ResultCache::ResultCache(std::size_t budget_bytes) : budget_(budget_bytes) {}

std::size_t ResultCache::size_of(const ValueMap& values) {
  std::size_t total = 0;
  for (const auto& [name, v] : values) total += v.bytes;
  return total;
}

std::optional<ValueMap> ResultCache::get(CacheKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->values;
}

bool ResultCache::contains(CacheKey key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.count(key) != 0;
}

std::vector<StoredPreview> ResultCache::previews(CacheKey key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  return it == index_.end() ? std::vector<StoredPreview>{} : it->second->previews;
}

bool ResultCache::put(CacheKey key, ValueMap values, std::vector<StoredPreview> previews) {
  std::size_t bytes = size_of(values);
  for (const StoredPreview& stored : previews) {
    const Value& p = stored.value;
    const bool shared = std::any_of(values.begin(), values.end(), [&](const auto& v) { return v.second.data == p.data; });
    if (!shared) bytes += p.bytes;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  if (bytes > budget_) return false;
  evict_to_fit(bytes);
  lru_.push_front(Entry{key, std::move(values), std::move(previews), bytes});
  index_[key] = lru_.begin();
  bytes_ += bytes;
  return true;
}

void ResultCache::erase(CacheKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return;
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

void ResultCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

void ResultCache::set_budget(std::size_t budget_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  budget_ = budget_bytes;
  evict_to_fit(0);
}

CacheStats ResultCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return CacheStats{lru_.size(), bytes_, budget_, hits_, misses_, evictions_};
}

void ResultCache::evict_to_fit(std::size_t incoming) {
  while (!lru_.empty() && bytes_ + incoming > budget_) {
    const Entry& victim = lru_.back();
    bytes_ -= victim.bytes;
    index_.erase(victim.key);
    lru_.pop_back();
    ++evictions_;
  }
}

}  // namespace vidgraph::engine
