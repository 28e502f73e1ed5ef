// The Hopper (sm_90a, wgmma) forward launcher, called by flash_forward() when the tuning row asks
// for it (AttentionTuning::fwd_wgmma). NVIDIA builds only; the HIP build neither compiles
// flash_forward_sm90.cu nor includes this header.
//
// Two kernels (flash_fwd_wgmma_kernel.h), both loading K/V by TMA from a producer warp into 3
// stages: without a block list (dense), two consumer warpgroups (two 64-row query blocks) per
// CTA share each K/V tile; with a list, one warpgroup per query block. They give the mma.sync
// forward's bits. The other variants measured on the H200 on the way to these (cp.async loads,
// single-thread TMA, ping-pong) were slower and are gone (tests/bench/results/NOTES.md).
#pragma once

#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels::flash {

// Launches the wgmma forward (arguments already checked by flash_forward; p.o, p.lse set; the
// device passed hopper_kernels_available(), sm90_host.h).
// D 64 or 128. Unsupported (an error, not a fallback) when a view's base or strides are not
// 16-byte aligned (TMA) or the driver has no tensor-map encoder.
Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t stream);

}  // namespace vidgraph::kernels::flash
