// Internal: what the training nodes (Train Wan, Distill Wan) share to write their results: the
// trained weights through a temporary published by the node's `naming`, and numbers for messages.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "engine/result.h"
#include "models/train/trainer.h"
#include "models/wan/wan_model.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes {

// The output kind of the `output` param: a safetensors file.
OutputKind weights_kind(const nlohmann::json& params);

// `value` printed with a printf `format` ("%.6f").
std::string format_number(const char* format, double value);

// The `weights_dtype` param of the nodes that call write_weights.
engine::ParamSpec weights_dtype_param();

// Writes `model`'s LoRA (ComfyUI names; without the extras `leave_out` names) or full checkpoint
// in the `weights_dtype` param's dtype to the `output` param's target; the published path or an
// error sentence.
engine::Result<std::string> write_weights(const engine::NodeContext& ctx, const wan::WanModelImpl& model,
                                          train::TrainMode mode, const std::set<std::string>& leave_out = {});

}  // namespace vidgraph::nodes
