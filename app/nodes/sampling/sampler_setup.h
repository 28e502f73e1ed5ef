// Internal: turns the Wan Sampler's params and inputs into the models' sampling options: checked
// size and frame rules, latent shape, solver, attention run (backend, method, its params) and the
// provenance saved with the latent. Every failure is a sentence naming the param to fix.
#pragma once

#include <map>
#include <string>

#include "engine/node_context.h"
#include "engine/result.h"
#include "models/sampling/flow_sampler.h"
#include "models/wan/wan_attention.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

struct SamplerSetup {
  sampling::FlowSampleOptions options;  // latent_shape, solver, steps, ... (callbacks unset)
  wan::AttentionRun attention;
  int width = 0;
  int height = 0;
  int frames = 0;
  std::map<std::string, std::string> info;
};

// Both Wan VAEs compress 4x in time (in space: 16x for Wan2.2's, 8x for Wan2.1's).
inline constexpr int kWanTemporalFactor = 4;

class AttentionParamSchema;

// `schema` maps the node's params to the chosen method's plugin params (attention_params_bridge.h);
// `attention` is the session's plugin the run will call.
engine::Result<SamplerSetup> make_sampler_setup(const engine::NodeContext& ctx, const DitHandle& dit,
                                                const AttentionParamSchema& schema,
                                                const AttentionSource& attention);

}  // namespace vidgraph::nodes
