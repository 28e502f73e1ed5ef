// Implements expert_swap.h.
#include "nodes/sampling/expert_swap.h"

#include <chrono>

#include <c10/core/InferenceMode.h>

#include "models/wan/wan_block_swap.h"
#include "nodes/nodes_log.h"

namespace vidgraph::nodes {

ExpertSwap::ExpertSwap(const DitHandle& high, const DitHandle& low)
    : high_(high.model), low_(low.model), high_blocks_(high.swap_offload_blocks),
      low_blocks_(low.swap_offload_blocks) {}

void ExpertSwap::bring(bool low) {
  if (on_device_ == int(low)) return;
  const auto start = std::chrono::steady_clock::now();
  // The sampler runs in inference mode; moved weights must stay ordinary tensors (they are
  // parameters, reused by later runs and by training).
  c10::InferenceMode ordinary(false);
  wan::WanModelImpl& waiting = low ? *high_ : *low_;
  wan::WanModelImpl& sampling = low ? *low_ : *high_;
  const int64_t blocks = low ? low_blocks_ : high_blocks_;
  const bool waiting_moves = (low ? high_blocks_ : low_blocks_) >= 0;
  if (waiting_moves && blocks >= 0) {
    wan::wan_trade_places(waiting, sampling, blocks);
  } else {  // one expert stays as loaded: the other moves alone
    if (waiting_moves) wan::wan_set_offload_blocks(waiting, waiting.config().num_layers);
    if (blocks >= 0) wan::wan_set_offload_blocks(sampling, blocks);
  }
  on_device_ = int(low);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nodes_logger()->info("The {}-noise expert samples now, the other waits in host memory (swapped in {:.2f} s).",
                       low ? "low" : "high", seconds);
}

sampling::VelocityFn ExpertSwap::wrap(sampling::VelocityFn fn, bool low) {
  return [this, fn = std::move(fn), low](const at::Tensor& x, const at::Tensor& t, bool need_uncond) {
    bring(low);
    return fn(x, t, need_uncond);
  };
}

}  // namespace vidgraph::nodes
