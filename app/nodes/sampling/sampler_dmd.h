// Internal: the Wan Sampler's `scheduler: dmd` settings: parses `dmd_timesteps` into the sampling
// options (DMD solver, step count = list length) and records them in the latent's provenance.
// Does nothing for the other schedulers.
#pragma once

#include <string>
#include <vector>

#include "engine/node_context.h"
#include "engine/result.h"
#include "nodes/sampling/sampler_setup.h"

namespace vidgraph::nodes {

// "1000, 757, 522" -> {1000, 757, 522}; false with a sentence in `error` for a bad list.
bool parse_dmd_timesteps(const std::string& text, std::vector<double>* out, std::string* error);

engine::Status apply_dmd_params(const engine::NodeContext& ctx, SamplerSetup& setup);

}  // namespace vidgraph::nodes
