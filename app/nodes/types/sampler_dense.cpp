// Implements sampler_dense.h.
#include "nodes/types/sampler_dense.h"

#include <algorithm>
#include <string>

namespace vidgraph::nodes {

int apply_dense_steps(const engine::NodeContext& ctx, SamplerSetup& s, sampling::WanVelocityOptions& velocity) {
  const int steps = s.options.steps;
  const int dense = std::min<int>(static_cast<int>(ctx.param_int("dense_steps")), steps);
  if (dense <= 0 || s.attention.method == "full") return 0;
  velocity.dense_steps = dense;
  velocity.dense_attention = wan::AttentionRun{s.attention.backend, "full", {}};
  s.info["dense_steps"] = std::to_string(dense);
  ctx.log_info("Steps 1-" + std::to_string(dense) + " of " + std::to_string(steps) + " use full attention, the " +
               "rest " + s.attention.method + ".");
  return dense;
}

}  // namespace vidgraph::nodes
