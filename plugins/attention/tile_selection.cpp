// Top-k tile selection and its inversion. See tile_selection.h.
#include "plugins/attention/tile_selection.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

namespace vidgraph::attention {

int64_t topk_for_sparsity(double sparsity, int64_t num_tiles) {
  const auto k = static_cast<int64_t>(std::ceil((1.0 - sparsity) * static_cast<double>(num_tiles)));
  return std::max<int64_t>(1, std::min(k, num_tiles));
}

TopkSelection select_topk_aten(const at::Tensor& scores, int64_t topk) {
  TORCH_CHECK(scores.dim() == 4, "coarse scores must be [B, H, Nq, Nkv], got ", scores.sizes());
  TORCH_CHECK(topk >= 1 && topk <= scores.size(3), "topk must be in [1, ", scores.size(3), "], got ", topk);
  // A stable descending sort keeps equal scores in index order: ties go to the lowest index.
  const at::Tensor order = std::get<1>(at::sort(scores, /*stable=*/true, /*dim=*/-1, /*descending=*/true));
  const at::Tensor chosen = std::get<0>(at::sort(order.narrow(-1, 0, topk), /*dim=*/-1));
  TopkSelection sel;
  sel.q2k = chosen.to(at::kInt).contiguous();
  std::tie(sel.k2q, sel.k2q_count) = invert_selection(sel.q2k, scores.size(3));
  return sel;
}

std::pair<at::Tensor, at::Tensor> invert_selection(const at::Tensor& q2k, int64_t num_kv_tiles) {
  // Dense map [B, H, Nq, Nkv] -> transposed [B, H, Nkv, Nq]; a stable sort moves chosen query tiles
  // first, in ascending order.
  const int64_t b = q2k.size(0), h = q2k.size(1), nq = q2k.size(2);
  at::Tensor map = at::zeros({b, h, nq, num_kv_tiles}, q2k.options().dtype(at::kInt));
  map.scatter_(3, q2k.to(at::kLong), 1);
  const at::Tensor chosen = map.transpose(2, 3).contiguous();  // [B, H, Nkv, Nq]
  const at::Tensor count = chosen.sum(-1).to(at::kInt);
  const at::Tensor order = std::get<1>(at::sort(chosen, /*stable=*/true, /*dim=*/-1, /*descending=*/true));
  const at::Tensor position = at::arange(nq, q2k.options().dtype(at::kLong));
  const at::Tensor k2q = order.masked_fill(position >= count.to(at::kLong).unsqueeze(-1), -1).to(at::kInt);
  return {k2q.contiguous(), count.contiguous()};
}

}  // namespace vidgraph::attention
