// The one autograd Function of the plugin: block-sparse attention over tiled tensors, forward and
// backward dispatched to the DevicePath of the tensors' device (the same Function on CPU and GPU).
//
// Inputs q, k, v [B, H, Sp, D] (tiled, see device_path.h; made contiguous); the selection (q2k, k2q,
// counts) and the tile sizes are constants of the call. Output [B, H, Sp, D]; gradients flow to q, k
// and v. A dense plan (only for a path whose dense_strided() is true) passes the callers' [B, S, H, D]
// tensors through untouched and has no selection or tile sizes (the dense form of device_path.h).
// Saved for backward: q, k, v, out, lse (plus the selection and tile sizes).
#pragma once

#include "plugins/attention/device_path.h"

#include <string>

namespace vidgraph::attention {

struct BlockSparsePlan {
  DevicePath* path = nullptr;
  bool dense = false;       // the dense form: selection and tile_sizes undefined
  TopkSelection selection;  // q2k, k2q, k2q_count (int32, on the tensors' device)
  at::Tensor tile_sizes;    // int32 [N]
  int64_t tile_volume = 64;
  double scale = 1.0;
};

// out [B, H, Sp, D] ([B, S, H, D] for a dense plan); differentiable in q, k, v.
at::Tensor block_sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const BlockSparsePlan& plan);

}  // namespace vidgraph::attention
