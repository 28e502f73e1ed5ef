// Internal: Load Wan Model's experts_on_gpu "active" at sampling time. Only the expert that samples
// keeps its blocks on the GPU (with its own offload_blocks); the other waits with every block in
// pinned host memory. At the first call of an expert in a video the two trade places
// (wan_trade_places: block weights move, results do not change), so a Wan2.2-A14B video costs
// one swap at the boundary and one at its start when the previous video ended on the other expert.
#pragma once

#include <cstdint>
#include <memory>

#include "models/sampling/flow_sampler.h"
#include "models/wan/wan_model.h"
#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

class ExpertSwap {
 public:
  // Experts whose swap_offload_blocks is -1 stay as they were loaded.
  ExpertSwap(const DitHandle& high, const DitHandle& low);

  // Whether either expert swaps at all.
  bool active() const { return high_blocks_ >= 0 || low_blocks_ >= 0; }
  // `fn` of the high- or low-noise expert, preceded by bringing that expert onto the device.
  sampling::VelocityFn wrap(sampling::VelocityFn fn, bool low);

 private:
  void bring(bool low);

  std::shared_ptr<wan::WanModelImpl> high_, low_;
  int64_t high_blocks_, low_blocks_;
  int on_device_ = -1;  // 0 high, 1 low, -1 not known yet
};

}  // namespace vidgraph::nodes
