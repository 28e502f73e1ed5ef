// The Hopper (sm_90a, wgmma) backward launcher, called by flash_backward() after the delta
// pre-pass when the tuning row asks for it (AttentionTuning::bwd_wgmma) and the device passed
// hopper_kernels_available() (sm90_host.h). NVIDIA builds only.
//
// Two kernels (flash_bwd_wgmma_kernels.h), one warpgroup per CTA, loading their streamed tiles by
// TMA into 2 stages: dQ over query→key lists and dK/dV over key→query lists. They give the
// mma.sync kernels' bits (vidgraph-hopper-check).
#pragma once

#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels::flash {

// Arguments already checked by flash_backward; p.delta holds rowsum(dO∘O). Unsupported (an
// error, not a fallback) when a view is not 16-byte aligned (TMA) or the driver has no
// tensor-map encoder.
Status launch_backward_wgmma(const FlashBackwardParams& p, const AttentionTuning& tune,
                             vgStream_t stream);

}  // namespace vidgraph::kernels::flash
