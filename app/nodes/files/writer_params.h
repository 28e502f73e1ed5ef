// What every writer node shares: the `naming` param (increment | fail | overwrite), the policy a run
// gives it (--overwrite forces overwrite), its preflight and the upgrade from the old `overwrite`.
#pragma once

#include <functional>
#include <string>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes {

// The `naming` param, default `increment`.
engine::ParamSpec naming_param();

// The node's naming policy for this run.
Naming writer_naming(const engine::NodeContext& ctx);

// The output kind a writer's params choose (a fixed kind for most writers).
using OutputKindFn = std::function<OutputKind(const nlohmann::json& params)>;

// The target of a writer whose path is in param `path_param` ("" = writes nothing this run).
OutputTarget writer_target(const nlohmann::json& params, const engine::RunOptions& options,
                           const std::string& path_param, const OutputKindFn& kind);

// Preflight: nothing at the target conflicts with its policy (see check_output_conflict).
engine::PreflightFn writer_preflight(std::string path_param, OutputKindFn kind);

// Upgrades params of a writer version that had the boolean `overwrite`: true → naming overwrite,
// false → naming increment (an earlier output is kept, the new one is written beside it).
nlohmann::json upgrade_overwrite_to_naming(const nlohmann::json& params);

}  // namespace vidgraph::nodes
