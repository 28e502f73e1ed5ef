// Implements sampler_dense.h.
#include "nodes/types/sampler_dense.h"

#include <algorithm>
#include <string>

#include "nodes/types/node_util.h"

namespace vidgraph::nodes {

engine::Result<int> apply_dense_steps(const engine::NodeContext& ctx, SamplerSetup& s,
                                      sampling::WanVelocityOptions& velocity) {
  const int steps = s.options.steps;
  const int dense = std::min<int>(static_cast<int>(ctx.param_int("dense_steps")), steps);
  if (dense <= 0 || s.attention.method == "full") return 0;
  // The method's preparation, for `full`: same device, dtype, head dim and grid.
  plugin::PrepareRequest request = s.attention.prepared->request;
  request.method = "full";
  request.params = {};
  plugin::PrepareResult prepared = s.attention.backend->prepare(request);
  if (!prepared.prepared) {
    return node_error(ctx, "dense_steps needs the plugin's full attention, which cannot run on this model: " +
                           prepared.error + "; set dense_steps to 0.");
  }
  velocity.dense_steps = dense;
  velocity.dense_attention = s.attention;
  velocity.dense_attention.method = "full";
  velocity.dense_attention.params = {};
  velocity.dense_attention.prepared = std::move(prepared.prepared);
  s.info["dense_steps"] = std::to_string(dense);
  ctx.log_info("Steps 1-" + std::to_string(dense) + " of " + std::to_string(steps) + " use full attention, the " +
               "rest " + s.attention.method + ".");
  return dense;
}

}  // namespace vidgraph::nodes
