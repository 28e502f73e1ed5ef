// Cache keys: xxHash64 over a node's type name, type version, canonical params (defaults filled,
// sorted keys), its fingerprint (NodeType::fingerprint, if any) and, per input port in name order,
// the port name, the source output name and the source node's key. Equal keys ⇔ same computation.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "result_cache.h"

namespace vidgraph::engine {

struct KeyInput {
  CacheKey source_key = 0;
  std::string source_output;
};

CacheKey compute_cache_key(const std::string& type_name, int type_version, const nlohmann::json& params,
                           const std::string& fingerprint, const std::map<std::string, KeyInput>& inputs);

}  // namespace vidgraph::engine
