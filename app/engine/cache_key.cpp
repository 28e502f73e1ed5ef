// Content keys for the result cache (see cache_key.h).
#include "cache_key.h"

#include <xxhash.h>

namespace vidgraph::engine {
namespace {

void feed(XXH64_state_t* st, const std::string& s) {
  const std::uint64_t n = s.size();
  XXH64_update(st, &n, sizeof(n));  // length prefix: "ab"+"c" differs from "a"+"bc"
  XXH64_update(st, s.data(), s.size());
}

void feed(XXH64_state_t* st, std::uint64_t v) { XXH64_update(st, &v, sizeof(v)); }

}  // namespace

CacheKey compute_cache_key(const std::string& type_name, int type_version, const nlohmann::json& params,
                           const std::string& fingerprint, const std::map<std::string, KeyInput>& inputs) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0x76676e6f6465ULL);
  feed(st, type_name);
  feed(st, static_cast<std::uint64_t>(type_version));
  feed(st, params.dump());  // nlohmann::json objects keep sorted keys: canonical
  feed(st, fingerprint);
  feed(st, static_cast<std::uint64_t>(inputs.size()));
  for (const auto& [port, in] : inputs) {
    feed(st, port);
    feed(st, in.source_output);
    feed(st, in.source_key);
  }
  const CacheKey key = XXH64_digest(st);
  XXH64_freeState(st);
  return key;
}

}  // namespace vidgraph::engine
