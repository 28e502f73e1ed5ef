// Internal: the Wan Sampler's `dense_steps`: the first N sampling steps run the plugin's `full`
// attention, the rest the chosen method. Logged once and recorded with the latent.
#pragma once

#include "engine/node_context.h"
#include "models/sampling/wan_velocity.h"
#include "nodes/types/sampler_setup.h"

namespace vidgraph::nodes {

// Fills velocity.dense_steps / dense_attention from the param (capped at the step count); returns
// the number of dense steps (0 when the method is `full` already or the param is 0).
int apply_dense_steps(const engine::NodeContext& ctx, SamplerSetup& setup, sampling::WanVelocityOptions& velocity);

}  // namespace vidgraph::nodes
