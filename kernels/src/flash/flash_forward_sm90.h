// The Hopper (sm_90a, wgmma) forward launcher, called by flash_forward() when the tuning row asks
// for it (AttentionTuning::fwd_wgmma). NVIDIA builds only; the HIP build neither compiles
// flash_forward_sm90.cu nor includes this header.
#pragma once

#include <string>

#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels::flash {

// True when the current device is sm_90 and this binary carries sm_90a code for the kernel.
bool wgmma_forward_available(std::string* why = nullptr);

// Launches the wgmma forward (arguments already checked by flash_forward). D 64 or 128.
Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t stream);

}  // namespace vidgraph::kernels::flash
