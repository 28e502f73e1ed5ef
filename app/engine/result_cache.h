// The result cache: node outputs keyed by a 64-bit content key (see cache_key.h), bounded by a byte
// budget with least-recently-used eviction.
//
// An entry also keeps the previews the node posted while computing it, so a node served from the
// cache can post them again (a second identical Preview Video node still shows its video; a sampler
// shows its last step's estimate).
//
// Contract: the byte size of an entry is the sum of its values' `bytes` (plus previews that share no
// data with a value). An entry larger than the
// whole budget is not stored. Storing evicts the least recently used entries until the total fits.
// Entries live across runs (a loaded model stays cached while it fits and is used). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "value.h"

namespace vidgraph::engine {

using CacheKey = std::uint64_t;

// A preview kept with an entry; step/steps > 0 for a step preview (NodeContext::emit_step_preview).
struct StoredPreview {
  Value value;
  std::int64_t step = 0;
  std::int64_t steps = 0;
};

struct CacheStats {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::size_t budget = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
};

class ResultCache {
 public:
  explicit ResultCache(std::size_t budget_bytes);

  std::optional<ValueMap> get(CacheKey key);  // marks the entry most recently used
  bool contains(CacheKey key) const;          // no LRU update, no stats
  // The previews stored with the entry (empty when none or absent); no LRU update, no stats.
  std::vector<StoredPreview> previews(CacheKey key) const;
  // Stores (or replaces) an entry; returns false when it is larger than the budget.
  bool put(CacheKey key, ValueMap values, std::vector<StoredPreview> previews = {});
  void erase(CacheKey key);
  void clear();
  void set_budget(std::size_t budget_bytes);  // evicts down to the new budget
  CacheStats stats() const;

  static std::size_t size_of(const ValueMap& values);

 private:
  struct Entry {
    CacheKey key;
    ValueMap values;
    std::vector<StoredPreview> previews;
    std::size_t bytes;
  };
  void evict_to_fit(std::size_t incoming);  // lock held

  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<CacheKey, std::list<Entry>::iterator> index_;
  std::size_t budget_;
  std::size_t bytes_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace vidgraph::engine
