// Internal: the noise levels Train Wan and Distill Wan train on — all of them, or one Wan2.2-A14B
// expert's side of the boundary, since the sampler runs each expert only there. One pair of params
// (noise_levels, expert_boundary) read the same way by both nodes.
#pragma once

#include <vector>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

// sigma = timestep / 1000 in [sigma_min, sigma_max].
struct NoiseLevels {
  double sigma_min = 0.0, sigma_max = 1.0;
};

// The params noise_levels (auto | all | high_noise | low_noise) and expert_boundary.
std::vector<engine::ParamSpec> noise_level_params();

// The levels the params choose for `dit` (auto: the side of the expert it is, else all), said in
// the log as what `activity` ("Training", "Distilling") covers.
NoiseLevels noise_levels(const engine::NodeContext& ctx, const DitHandle& dit, const char* activity);

}  // namespace vidgraph::nodes
