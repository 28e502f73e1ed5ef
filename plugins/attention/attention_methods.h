// The three methods over the shared stages: `full`, `vsa` and `sla_star` (DESIGN.md "Data contracts",
// vsa.md, sla.md). Each takes a checked AttentionCall and its preparation (attention_checks.h,
// attention_prepare.h) and returns
// out [B, S, H, D] in q's dtype and device, differentiable in q, k, v, gate and proj_l, plus the
// selection statistics.
//
//  full:     dense softmax attention, scale 1/sqrt(D), computed blockwise by the block-sparse Function
//            with every 64-token block selected (1-D tiling of the S tokens).
//  vsa:      tile (pads zero) -> mean-pool per tile (fp32+ sum / real count) -> coarse softmax attention
//            over tile means (scale 1/sqrt(D)) -> per (b, h, query tile) top-k of the coarse scores
//            (topk = max(1, min(ceil((1 - sparsity) N), N)), ties to the lowest index) -> block-sparse
//            fine attention (pad keys masked) -> untile; out = fine + coarse * gate (gate absent: fine).
//  sla_star: vsa + proj_l(o_lin), o_lin = phi(q)(phi(k)^T v) / (phi(q) . sum_S phi(k) + 1e-5) over all
//            real tokens per (b, h), phi = softmax over D (or elu+1, relu); proj_l absent: zero.
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/attention/attention_prepare.h"

namespace vidgraph::attention {

// `prepared` holds the method's params, layout and topk; the statistics are gathered only when
// `want_stats` (they cost device work: counts over the selection lists).
plugin::AttentionResult run_full(const plugin::AttentionCall& call, const PreparedState& prepared, bool want_stats);
plugin::AttentionResult run_vsa(const plugin::AttentionCall& call, const PreparedState& prepared, bool want_stats);
plugin::AttentionResult run_sla_star(const plugin::AttentionCall& call, const PreparedState& prepared,
                                     bool want_stats);

// The feature map phi of the linear branch, over the last dim, in x's dtype: "softmax", "elu" (elu + 1)
// or "relu"; anything else is an error.
at::Tensor feature_map(const at::Tensor& x, const std::string& map);

// The SLA* linear branch alone: [B, S, H, D] -> [B, S, H, D] (accumulation dtype: fp64 for fp64
// inputs, else fp32). feature_map: "softmax", "elu" or "relu".
at::Tensor linear_branch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::string& feature_map);

}  // namespace vidgraph::attention
