// Content keys for the result cache (see cache_key.h).
#include "cache_key.h"

#include <xxhash.h>

#include <cstdint>
#include <cstring>

namespace vidgraph::engine {
namespace {

void feed(XXH64_state_t* st, const std::string& s) {
  const std::uint64_t n = s.size();
  XXH64_update(st, &n, sizeof(n));  // length prefix: "ab"+"c" differs from "a"+"bc"
  XXH64_update(st, s.data(), s.size());
}

void feed(XXH64_state_t* st, std::uint64_t v) { XXH64_update(st, &v, sizeof(v)); }

// Feeds a JSON value canonically: a type tag, then the content (objects iterate in sorted key
// order). Strings go in as raw bytes, so a param holding a non-UTF-8 file name (legal on Linux)
// keys the cache like any other; json::dump() would throw on it, and dumping with replacement
// characters would give two different names the same key.
void feed_json(XXH64_state_t* st, const nlohmann::json& j) {
  using Type = nlohmann::json::value_t;
  // A file's 3 parses as unsigned, --set's 3 as signed: one tag for every integer an int64 holds.
  Type type = j.type();
  if (type == Type::number_unsigned && j.get<std::uint64_t>() <= std::uint64_t(INT64_MAX)) type = Type::number_integer;
  feed(st, static_cast<std::uint64_t>(type));
  switch (type) {
    case Type::object:
      feed(st, static_cast<std::uint64_t>(j.size()));
      for (auto it = j.begin(); it != j.end(); ++it) {
        feed(st, it.key());
        feed_json(st, it.value());
      }
      break;
    case Type::array:
      feed(st, static_cast<std::uint64_t>(j.size()));
      for (const auto& v : j) feed_json(st, v);
      break;
    case Type::string: feed(st, j.get_ref<const std::string&>()); break;
    case Type::boolean: feed(st, static_cast<std::uint64_t>(j.get<bool>())); break;
    case Type::number_integer: feed(st, static_cast<std::uint64_t>(j.get<std::int64_t>())); break;
    case Type::number_unsigned: feed(st, j.get<std::uint64_t>()); break;
    case Type::number_float: {
      const double d = j.get<double>();
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof(bits));
      feed(st, bits);
      break;
    }
    case Type::binary: feed(st, std::string(j.get_binary().begin(), j.get_binary().end())); break;
    default: break;  // null, discarded: the type tag says it all
  }
}

}  // namespace

CacheKey compute_cache_key(const std::string& type_name, int type_version, const nlohmann::json& params,
                           const std::string& fingerprint, const std::map<std::string, KeyInput>& inputs) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0x76676e6f6465ULL);
  feed(st, type_name);
  feed(st, static_cast<std::uint64_t>(type_version));
  feed_json(st, params);
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
