#include "models/wan/wan_block.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/silu.h>
#include <c10/util/Exception.h>

namespace vidgraph::wan {

WanMlpImpl::WanMlpImpl(const WanMlpOptions& options_) : options(options_) {
  reset();
}

void WanMlpImpl::reset() {
  WanLinearOptions a(options.in, options.hidden);
  a.tensor_options = options.tensor_options;
  WanLinearOptions b(options.hidden, options.out);
  b.tensor_options = options.tensor_options;
  fc0 = register_module("0", WanLinear(a));
  fc2 = register_module("2", WanLinear(b));
}

at::Tensor WanMlpImpl::forward(const at::Tensor& x) {
  at::Tensor h = fc0(x);
  h = options.activation == MlpActivation::GeluTanh ? at::gelu(h, "tanh") : at::silu(h);
  return fc2(h);
}

at::Tensor modulate_groups(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  const int64_t B = x.size(0), L = x.size(1), C = x.size(2), G = shift.size(1);
  TORCH_CHECK(L % G == 0, "Modulation groups (", G, ") do not divide the ", L, " tokens evenly");
  // One pass: shift + x * (1 + scale), broadcast per group.
  return at::addcmul(shift.unsqueeze(2), x.view({B, G, L / G, C}), scale.unsqueeze(2) + 1.0).view({B, L, C});
}

at::Tensor gate_groups(const at::Tensor& y, const at::Tensor& gate) {
  const int64_t B = y.size(0), L = y.size(1), C = y.size(2), G = gate.size(1);
  TORCH_CHECK(L % G == 0, "Gate groups (", G, ") do not divide the ", L, " tokens evenly");
  // bf16/fp16 y times the fp32 gate promotes to fp32 in the same pass (no separate cast).
  return (y.view({B, G, L / G, C}) * gate.unsqueeze(2)).view({B, L, C});
}

WanAttentionBlockImpl::WanAttentionBlockImpl(const WanBlockOptions& options_) : options(options_) {
  reset();
}

void WanAttentionBlockImpl::reset() {
  const WanConfig& c = options.config;
  modulation = register_parameter("modulation", at::empty({1, 6, c.dim}, options.fp32_options),
                                  /*requires_grad=*/false);
  WanAttentionOptions ao;
  ao.dim = c.dim;
  ao.num_heads = c.num_heads;
  ao.eps = c.eps;
  ao.with_gate_compress = c.with_gate_compress;
  ao.with_proj_l = c.with_proj_l;
  ao.compute_options = options.compute_options;
  ao.fp32_options = options.fp32_options;
  WanNormOptions plain(c.dim);
  plain.eps = c.eps;
  plain.affine = false;
  WanNormOptions affine(c.dim);
  affine.eps = c.eps;
  affine.tensor_options = options.fp32_options;
  norm1 = register_module("norm1", WanLayerNorm(plain));
  self_attn = register_module("self_attn", WanSelfAttention(ao));
  norm3 = register_module("norm3", WanLayerNorm(affine));
  cross_attn = register_module("cross_attn", WanCrossAttention(ao));
  norm2 = register_module("norm2", WanLayerNorm(plain));
  ffn = register_module(
      "ffn", WanMlp(WanMlpOptions{c.dim, c.ffn_dim, c.dim, MlpActivation::GeluTanh, options.compute_options}));
}

at::Tensor WanAttentionBlockImpl::forward(const at::Tensor& x, const at::Tensor& e0, const at::Tensor& context,
                                          const std::array<int64_t, 3>& grid, const RopeTables& rope,
                                          const AttentionRun& run) {
  at::Tensor m = modulation.to(at_least_fp32(e0.scalar_type())).unsqueeze(0) + e0;  // [B, G, 6, dim]
  if (plugin::DitKernels* fused = fused_kernels(run, x.device(), self_attn->q->dtype())) {
    return forward_fused(*fused, x, m, context, grid, rope, run);
  }
  auto mi = [&](int64_t i) { return m.select(2, i); };         // [B, G, dim]
  at::Tensor y = self_attn(modulate_groups(norm1(x), mi(0), mi(1)), grid, rope, run);
  at::Tensor h = x + gate_groups(y, mi(2));  // fp32 residual
  h = h + cross_attn(norm3(h), context);  // compute dtype + fp32 promotes to fp32
  y = ffn(modulate_groups(norm2(h), mi(3), mi(4)));
  return h + gate_groups(y, mi(5));  // [B, L, dim] fp32
}

at::Tensor WanAttentionBlockImpl::forward_fused(plugin::DitKernels& fused, const at::Tensor& x_in, const at::Tensor& m,
                                                const at::Tensor& context, const std::array<int64_t, 3>& grid,
                                                const RopeTables& rope, const AttentionRun& run) {
  const at::ScalarType dtype = self_attn->q->dtype();
  const double eps = options.config.eps;
  const at::Tensor x = x_in.to(at::kFloat).contiguous();
  auto mi = [&](int64_t i) { return m.select(2, i); };  // [B, G, dim]
  at::Tensor y = self_attn(fused.layer_norm_modulate(x, {}, {}, eps, mi(0), mi(1), dtype), grid, rope, run);
  at::Tensor h = fused.gate_residual(x, y, mi(2), at::empty_like(x));  // the block's own residual stream
  y = cross_attn(fused.layer_norm_modulate(h, norm3->weight, norm3->bias, eps, {}, {}, dtype), context, &fused);
  fused.gate_residual(h, y, {}, h);
  y = ffn(fused.layer_norm_modulate(h, {}, {}, eps, mi(3), mi(4), dtype));
  return fused.gate_residual(h, y, mi(5), h);  // [B, L, dim] fp32
}

}  // namespace vidgraph::wan
