// Top-k selection of KV tiles from coarse scores, shared ATen implementation (any device).
//
// topk = max(1, min(ceil((1 - sparsity) * N), N)) (vsa.md 1.4). Per (batch, head, query tile) row of
// scores [B, H, N, N]: exactly topk distinct tiles with the largest scores, ties broken by the lowest
// tile index; q2k lists ascending. k2q inverts it: for each KV tile, the query tiles that chose it,
// ascending, -1 padded, with counts.
#pragma once

#include "plugins/attention/device_path.h"

namespace vidgraph::attention {

int64_t topk_for_sparsity(double sparsity, int64_t num_tiles);

// scores: fp32/fp64 [B, H, N, N] (finite). See the file comment.
TopkSelection select_topk_aten(const at::Tensor& scores, int64_t topk);

// q2k int32 [B, H, N, topk] -> {k2q int32 [B, H, N, N] (-1 padded), k2q_count int32 [B, H, N]}.
std::pair<at::Tensor, at::Tensor> invert_selection(const at::Tensor& q2k, int64_t num_kv_tiles);

}  // namespace vidgraph::attention
