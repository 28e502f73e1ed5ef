// Implements sampler_dense.h.
#include "nodes/sampling/sampler_dense.h"

#include <algorithm>
#include <string>
#include <vector>

#include "nodes/common/node_util.h"

namespace vidgraph::nodes {

engine::Result<int> apply_dense_steps(const engine::NodeContext& ctx, SamplerSetup& s,
                                      sampling::WanVelocityOptions& velocity) {
  const int steps = s.options.steps;
  const int dense = std::min<int>(static_cast<int>(ctx.param_int("dense_steps")), steps);
  const plugin::PreparedAttention& sparse = *s.attention.prepared;
  if (dense <= 0 || sparse.kind == plugin::MethodKind::Dense) return 0;
  // The plugin's dense method, prepared like the run's: same device, dtype, head dim and grid.
  const std::vector<plugin::MethodInfo> methods = s.attention.backend->methods();
  const plugin::MethodInfo* full = plugin::find_method_of_kind(methods, plugin::MethodKind::Dense);
  if (full == nullptr) return node_error(ctx, "dense_steps needs a dense attention method; the plugin has none.");
  plugin::PrepareRequest request = sparse.request;
  request.method = full->name;
  request.params = {};
  plugin::PrepareResult prepared = s.attention.backend->prepare(request);
  if (!prepared.prepared) {
    return node_error(ctx, "dense_steps needs the plugin's " + full->name + " attention, which cannot run on this "
                           "model: " + prepared.error + "; set dense_steps to 0.");
  }
  velocity.dense_steps = dense;
  velocity.dense_attention = s.attention;
  velocity.dense_attention.prepared = std::move(prepared.prepared);
  s.info["dense_steps"] = std::to_string(dense);
  ctx.log_info("Steps 1-" + std::to_string(dense) + " of " + std::to_string(steps) + " use " + full->name +
               " attention, the rest " + sparse.request.method + ".");
  return dense;
}

}  // namespace vidgraph::nodes
