// Memory accounting of the Wan DiT on a device, for planning (does it fit?) and for reports next
// to the measured peak. Weights are exact (the model's own dtype policy: matmul weights in the
// compute dtype; modulation tables, norms, time MLPs and proj_l in fp32). Activations are an upper
// estimate of the live tensors at the peak of one block in inference: the fp32 residual stream
// (old + new), plus the larger of the self-attention phase (fp32 normalised input, q/k/v and the
// output in the compute dtype, two fp32 RoPE temporaries) and the FFN phase (fp32 normalised input,
// its compute-dtype copy, the hidden layer and its GELU). The attention backend's own workspace is
// not included (flash-style kernels keep it O(L)).
#pragma once

#include <array>
#include <cstdint>

#include <c10/core/ScalarType.h>

#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_config.h"

namespace vidgraph::wan {

struct WanMemoryEstimate {
  int64_t weight_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t total_bytes() const { return weight_bytes + activation_bytes; }
};

// latent_frames/height/width: the latent [C, F, H, W] sizes (before patchify); batch: 2 when the
// CFG branches run batched.
WanMemoryEstimate wan_estimate_memory(const WanConfig& config, at::ScalarType compute_dtype,
                                      const std::array<int64_t, 3>& latent_fhw, int64_t batch);

// Where loading `info` with `options` puts the DiT's weights, before anything is read: on the
// options' device, except the last offload_blocks blocks, which wait in host memory; each
// parameter as wan_estimate_memory counts it, but a linear weight stored as fp8 and kept so
// (keep_fp8) at one byte. On a CPU device `host` is 0 and everything counts as `device`.
struct WanLoadBytes {
  int64_t device = 0;
  int64_t host = 0;
};
WanLoadBytes wan_estimate_load(const WanCheckpointInfo& info, const WanLoadOptions& options);

}  // namespace vidgraph::wan
