// Host side shared by the Hopper (sm_90a) kernels: whether the device can run them, and the TMA
// tensor maps of [B, S, H, D] views. NVIDIA builds only.
#pragma once

#include <cuda.h>

#include <string>

#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels::flash {

// True when the current device is sm_90 and this binary carries sm_90a code (found once per
// device); otherwise false with the reason in `why`.
bool hopper_kernels_available(std::string* why = nullptr);

// A 4-D TMA map of the [B, S, H, D] view `t` (dims innermost first: D, H, S, B), box 64 x 1 x 64 x 1
// (one 64-column panel of 64 rows), 128B swizzle, zero fill past the end (common/wgmma.h).
// Unsupported, naming `who`, `what` and the tuning flag `knob` to turn off, when the driver has no
// encoder or the view is not 16-byte aligned.
Status make_tensor_map(CUtensorMap* map, const TensorView& t, int batch, int seq, int heads, int d,
                       bool bf16, const char* who, const char* what, const char* knob);

}  // namespace vidgraph::kernels::flash
