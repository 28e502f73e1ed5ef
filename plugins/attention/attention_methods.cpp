// full, vsa and sla_star over the shared stages. See attention_methods.h.
#include "plugins/attention/attention_methods.h"

#include "plugins/attention/block_sparse_function.h"
#include "plugins/attention/tile_layout.h"
#include "plugins/attention/tile_selection.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace vidgraph::attention {
namespace {

using plugin::AttentionCall;
using plugin::AttentionResult;

at::ScalarType accumulation_type(const at::Tensor& x) {
  return x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// Fills the statistics of a selection.
plugin::SelectionStats stats_of(const TopkSelection& sel, const TileLayout& layout, bool sparse) {
  plugin::SelectionStats s;
  s.sparse = sparse;
  s.query_tiles = layout.num_tiles;
  s.kv_tiles = layout.num_tiles;
  s.topk = sel.q2k.size(3);
  s.tile_volume = layout.tile_volume;
  s.density = static_cast<double>(s.topk) / static_cast<double>(s.kv_tiles);
  s.selected_per_query_tile = (sel.q2k >= 0).sum(-1).to(at::kLong);
  s.selected_per_kv_tile = sel.k2q_count.to(at::kLong);
  s.tile_sizes = layout.tile_sizes;
  return s;
}

// Statistics of the dense form (no lists): every KV tile for every query tile.
plugin::SelectionStats dense_stats(const at::Tensor& q, const TileLayout& layout) {
  plugin::SelectionStats s;
  s.sparse = false;
  s.query_tiles = s.kv_tiles = s.topk = layout.num_tiles;
  s.tile_volume = layout.tile_volume;
  s.density = 1.0;
  const auto opts = q.options().dtype(at::kLong);
  s.selected_per_query_tile = at::full({q.size(0), q.size(2), layout.num_tiles}, layout.num_tiles, opts);
  s.selected_per_kv_tile = s.selected_per_query_tile.clone();
  s.tile_sizes = layout.tile_sizes;
  return s;
}

struct VsaParts {
  at::Tensor out;  // [B, S, H, D]
  plugin::SelectionStats stats;
  DevicePath* path = nullptr;
};

VsaParts vsa_parts(const AttentionCall& call, const PreparedState& prepared, bool want_stats) {
  const at::Tensor& q = call.q;
  const std::string& method = prepared.method;
  DevicePath& path = *prepared.path;
  const TileLayout* layout = prepared.layout.get();
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  // [B, S, H, D] -> [B, H, Sp, D], with tile means [B, H, N, D] for the coarse branch (of v only when
  // gated: the coarse output is used only then)
  const bool gated = call.extras.gate.defined();
  const TiledTokens q_t = path.tile(q, *layout, true), k_t = path.tile(call.k, *layout, true),
                    v_t = path.tile(call.v, *layout, gated);
  const at::Tensor scores = at::matmul(q_t.mean, k_t.mean.transpose(-1, -2)) * scale;  // [B, H, N, N]
  at::Tensor detached = scores.detach();
  if (q.device().is_cpu()) {
    TORCH_CHECK(at::isfinite(detached).all().item<bool>(), "method ", method,
                ": the coarse scores are not finite; q or k contains NaN or infinite values");
  } else {
    // No host round trip on a GPU: non-finite scores are mapped to finite ones so the selection stays
    // well formed; the NaNs still reach the output, where the sampler reports a non-finite latent.
    detached = at::nan_to_num(detached);
  }
  BlockSparsePlan plan;
  plan.path = &path;
  plan.selection = path.select_topk(detached, prepared.topk);
  plan.tile_sizes = layout->tile_sizes_i32;
  plan.tile_volume = layout->tile_volume;
  plan.scale = scale;
  // Fine branch [B, H, Sp, D]; coarse output per tile [B, H, N, D] (only when gated)
  const at::Tensor fine = block_sparse_attention(q_t.tiled, k_t.tiled, v_t.tiled, plan);
  at::Tensor coarse;
  if (gated) coarse = at::matmul(at::softmax(scores, -1), v_t.mean);
  // [B, H, Sp, D] -> [B, S, H, D], plus coarse * gate
  const at::Tensor out = path.untile(fine, *layout, coarse, call.extras.gate);
  return {out, want_stats ? stats_of(plan.selection, *layout, true) : plugin::SelectionStats{}, &path};
}

}  // namespace

at::Tensor feature_map(const at::Tensor& x, const std::string& map) {
  if (map == "softmax") return at::softmax(x, -1);
  if (map == "elu") return at::elu(x) + 1.0;
  if (map == "relu") return at::relu(x);
  TORCH_CHECK(false, "unknown feature map '", map, "' (softmax, elu or relu)");
}

AttentionResult run_full(const AttentionCall& call, const PreparedState& prepared, bool want_stats) {
  const at::Tensor& q = call.q;
  DevicePath& path = *prepared.path;
  // 1-D tiling of the S tokens into 64-token blocks; every block attends to every block.
  const TileLayout* layout = prepared.layout.get();
  const int64_t n = layout->num_tiles;
  BlockSparsePlan plan;
  plan.path = &path;
  plan.tile_volume = layout->tile_volume;
  plan.scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  AttentionResult r;
  if (path.dense_strided()) {
    // Dense form: the [B, S, H, D] tensors in and out, no lists, no copies.
    plan.dense = true;
    r.out = block_sparse_attention(q, call.k, call.v, plan);
    if (want_stats) r.stats = dense_stats(q, *layout);
    return r;
  }
  const auto opts = q.options().dtype(at::kInt);
  plan.selection.q2k = at::arange(n, opts).expand({q.size(0), q.size(2), n, n}).contiguous();
  plan.selection.k2q = plan.selection.q2k;
  plan.selection.k2q_count = at::full({q.size(0), q.size(2), n}, n, opts);
  plan.tile_sizes = layout->tile_sizes_i32;
  r.out = untile_tokens(
      block_sparse_attention(tile_tokens(q, *layout), tile_tokens(call.k, *layout), tile_tokens(call.v, *layout), plan),
      *layout);
  if (want_stats) r.stats = stats_of(plan.selection, *layout, false);
  return r;
}

AttentionResult run_vsa(const AttentionCall& call, const PreparedState& prepared, bool want_stats) {
  VsaParts parts = vsa_parts(call, prepared, want_stats);
  return {parts.out, parts.stats};
}

at::Tensor linear_branch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::string& map) {
  const at::ScalarType acc = accumulation_type(q);
  // [B, S, H, D] -> [B, H, S, D]
  const at::Tensor fq = feature_map(q.to(acc), map).permute({0, 2, 1, 3});
  const at::Tensor fk = feature_map(k.to(acc), map).permute({0, 2, 1, 3});
  const at::Tensor vv = v.to(acc).permute({0, 2, 1, 3});
  const at::Tensor kv = at::matmul(fk.transpose(-1, -2), vv);           // [B, H, D, D]
  const at::Tensor ksum = fk.sum(2, /*keepdim=*/true);                  // [B, H, 1, D]
  const at::Tensor num = at::matmul(fq, kv);                            // [B, H, S, D]
  const at::Tensor den = (fq * ksum).sum(-1, /*keepdim=*/true) + 1e-5;  // [B, H, S, 1]
  return (num / den).permute({0, 2, 1, 3});                             // [B, S, H, D]
}

AttentionResult run_sla_star(const AttentionCall& call, const PreparedState& prepared, bool want_stats) {
  VsaParts parts = vsa_parts(call, prepared, want_stats);
  const auto& w = call.extras.proj_l_weight;
  const auto& b = call.extras.proj_l_bias;
  if (w.defined() || b.defined()) {
    if (w.defined()) {
      parts.out = parts.path->add_linear_branch(parts.out, call.q, call.k, call.v, prepared.feature_map, w, b);
    } else {
      parts.out = parts.out + b.to(parts.out.scalar_type());  // a zero weight: proj_l(o_lin) is the bias
    }
  }
  return {parts.out, parts.stats};
}

}  // namespace vidgraph::attention
