// Internal: the Wan Sampler's `dense_steps`: the first N sampling steps run the plugin's `full`
// attention, the rest the chosen method. Prepared at set-up like the method itself, logged once and
// recorded with the latent.
#pragma once

#include "engine/node_context.h"
#include "engine/result.h"
#include "models/sampling/wan_velocity.h"
#include "nodes/sampling/sampler_setup.h"

namespace vidgraph::nodes {

// Fills velocity.dense_steps / dense_attention from the param (capped at the step count); returns
// the number of dense steps (0 when the method is `full` already or the param is 0), or a node error
// when the plugin cannot prepare `full` for this model and latent.
engine::Result<int> apply_dense_steps(const engine::NodeContext& ctx, SamplerSetup& setup,
                                      sampling::WanVelocityOptions& velocity);

}  // namespace vidgraph::nodes
