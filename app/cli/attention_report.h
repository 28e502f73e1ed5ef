// JSON renderings of vidgraph-attention results, kept apart from the computing code.
#pragma once

#include "plugins/api/attention_backend.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace vidgraph::cli {

// {"sparse", "query_tiles", "kv_tiles", "topk", "tile_volume", "density",
//  "selected_per_query_tile": {min, max, mean}, "selected_per_kv_tile": {min, max, mean},
//  "tile_sizes": {min, max, ragged}}
nlohmann::json selection_stats_json(const plugin::SelectionStats& stats);

// [{"name", "description", "params": [{"name", "type", "default", "min", "max", "choices", ...}]}]
nlohmann::json methods_json(const std::vector<plugin::MethodInfo>& methods);

}  // namespace vidgraph::cli
