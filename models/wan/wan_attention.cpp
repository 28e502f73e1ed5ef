#include "models/wan/wan_attention.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

#include "models/parallel/sequence_parallel.h"

namespace vidgraph::wan {

at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "dense_attention expects q, k, v [B, L, H, D], got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  TORCH_CHECK(k.sizes() == v.sizes() && q.size(0) == k.size(0) && q.size(2) == k.size(2) && q.size(3) == k.size(3),
              "dense_attention: q ", q.sizes(), ", k ", k.sizes(), " and v ", v.sizes(),
              " do not agree on batch, heads and head dim");
  at::Tensor qh = q.transpose(1, 2);  // [B, H, Lq, D]
  at::Tensor kh = k.to(q.scalar_type()).transpose(1, 2);
  at::Tensor vh = v.to(q.scalar_type()).transpose(1, 2);
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(qh, kh, vh).transpose(1, 2);  // [B, Lq, H, D]
#else
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const int64_t chunk = 2048;
  const int64_t lq = qh.size(2);
  at::Tensor kt = kh.transpose(2, 3);  // [B, H, D, Lk]
  std::vector<at::Tensor> outs;
  for (int64_t s = 0; s < lq; s += chunk) {
    at::Tensor qc = qh.narrow(2, s, std::min(chunk, lq - s));
    at::Tensor scores = at::matmul(qc.mul(scale), kt);  // [B, H, c, Lk]
    at::Tensor probs = at::softmax(scores.to(at_least_fp32(scores.scalar_type())), -1).to(vh.scalar_type());
    outs.push_back(at::matmul(probs, vh));  // [B, H, c, D]
  }
  return at::cat(outs, 2).transpose(1, 2);  // [B, Lq, H, D]
#endif
}

plugin::PrepareRequest AttentionChoice::request(const WanConfig& config, c10::Device device, at::ScalarType dtype,
                                                at::IntArrayRef latent_shape) const {
  const auto n = static_cast<int64_t>(latent_shape.size());
  TORCH_CHECK(n >= 4, "a latent shape is [C, F, H, W] or [B, C, F, H, W], got ", latent_shape);
  const auto& p = config.patch_size;
  plugin::PrepareRequest r;
  r.method = method;
  r.params = params;
  r.device = device;
  r.dtype = dtype;
  r.head_dim = config.head_dim();
  r.grid = {latent_shape[n - 3] / p[0], latent_shape[n - 2] / p[1], latent_shape[n - 1] / p[2]};
  return r;
}

AttentionRun AttentionChoice::prepare(const WanConfig& config, c10::Device device, at::ScalarType dtype,
                                      at::IntArrayRef latent_shape) const {
  AttentionRun run;
  run.backend = backend;
  run.sequence_parallel = sequence_parallel;
  if (backend == nullptr) return run;
  plugin::PrepareResult r = backend->prepare(request(config, device, dtype, latent_shape));
  if (!r.prepared) throw std::invalid_argument("The attention plugin cannot prepare '" + method + "': " + r.error);
  run.prepared = std::move(r.prepared);
  return run;
}

plugin::DitKernels* fused_kernels(const AttentionRun& run, c10::Device device, at::ScalarType compute_dtype) {
  if (run.dit_kernels == nullptr || !c10::InferenceMode::is_enabled()) return nullptr;
  return run.dit_kernels->supports(device, compute_dtype) ? run.dit_kernels : nullptr;
}

namespace {

WanLinear make_linear(int64_t in, int64_t out, const at::TensorOptions& opts) {
  WanLinearOptions o(in, out);
  o.tensor_options = opts;
  return WanLinear(o);
}

WanRMSNorm make_rms(int64_t dim, double eps, const at::TensorOptions& opts) {
  WanNormOptions o(dim);
  o.eps = eps;
  o.tensor_options = opts;
  return WanRMSNorm(o);
}

// The projections and q/k norms both attentions share, under their checkpoint names.
template <typename Attention>
void register_projections(Attention& m) {
  const WanAttentionOptions& opt = m.options;
  const int64_t d = opt.dim;
  m.q = m.register_module("q", make_linear(d, d, opt.compute_options));
  m.k = m.register_module("k", make_linear(d, d, opt.compute_options));
  m.v = m.register_module("v", make_linear(d, d, opt.compute_options));
  m.o = m.register_module("o", make_linear(d, d, opt.compute_options));
  m.norm_q = m.register_module("norm_q", make_rms(d, opt.eps, opt.fp32_options));
  m.norm_k = m.register_module("norm_k", make_rms(d, opt.eps, opt.fp32_options));
}

}  // namespace

WanSelfAttentionImpl::WanSelfAttentionImpl(const WanAttentionOptions& options_) : options(options_) {
  reset();
}

void WanSelfAttentionImpl::reset() {
  const int64_t d = options.dim;
  register_projections(*this);
  if (options.with_gate_compress) {
    to_gate_compress = register_module("to_gate_compress", make_linear(d, d, options.compute_options));
  }
  if (options.with_proj_l) {
    const int64_t hd = d / options.num_heads;
    proj_l = register_module("proj_l", make_linear(hd, hd, options.fp32_options));
  }
}

at::Tensor WanSelfAttentionImpl::forward(const at::Tensor& x_in, const std::array<int64_t, 3>& grid,
                                         const RopeTables& rope, const AttentionRun& run) {
  const int64_t B = x_in.size(0), L = x_in.size(1);
  const int64_t H = options.num_heads, D = options.dim / options.num_heads;
  const auto dtype = q->dtype();
  const at::Tensor x = x_in.to(dtype);  // once for the q, k, v and gate projections
  // [B, L, dim] -> [B, L, H, D]; norm and RoPE in fp32, then back to the compute dtype.
  plugin::DitKernels* fused = fused_kernels(run, x.device(), dtype);
  auto norm_rope = [&](WanRMSNorm& norm, const at::Tensor& y) {
    if (fused) return fused->rms_norm_rope(y, norm->weight, norm->options.eps, rope.cos, rope.sin, H).view({B, L, H, D});
    return rope_apply(norm(y).view({B, L, H, D}), rope).to(dtype);
  };
  at::Tensor qh = norm_rope(norm_q, q(x));
  at::Tensor kh = norm_rope(norm_k, k(x));
  at::Tensor vh = v(x).view({B, L, H, D});
  // Sequence-parallel: L local tokens of every head -> all grid tokens of this rank's heads.
  parallel::SequenceParallel* sp = run.sequence_parallel;
  const int64_t S = grid[0] * grid[1] * grid[2];
  auto to_heads = [&](const at::Tensor& t) { return sp != nullptr ? sp->tokens_to_heads(t, S) : t; };
  qh = to_heads(qh);
  kh = to_heads(kh);
  vh = to_heads(vh);
  at::Tensor out;  // [B, S, H / world, D]
  if (run.backend == nullptr) {
    out = dense_attention(qh, kh, vh);
  } else {
    TORCH_CHECK(run.prepared != nullptr, "Self-attention through the attention plugin needs a preparation "
                "(AttentionChoice::prepare); none was given.");
    plugin::AttentionCall call;
    call.q = qh;
    call.k = kh;
    call.v = vh;
    call.prepared = run.prepared;
    // Only the extras the method reads: the gate projection is a full dim x dim matmul.
    if (run.prepared->uses_gate && !to_gate_compress.is_empty()) {
      call.extras.gate = to_heads(to_gate_compress(x).view({B, L, H, D}));
    }
    if (run.prepared->uses_proj_l && !proj_l.is_empty()) {
      call.extras.proj_l_weight = proj_l->dense_weight();
      call.extras.proj_l_bias = proj_l->bias;
    }
    out = run.backend->forward(call);
  }
  if (sp != nullptr) out = sp->heads_to_tokens(out);  // [B, L, H, D]
  return o(out.reshape({B, L, H * D}));  // [B, L, dim]
}

WanCrossAttentionImpl::WanCrossAttentionImpl(const WanAttentionOptions& options_) : options(options_) {
  reset();
}

void WanCrossAttentionImpl::reset() { register_projections(*this); }

at::Tensor WanCrossAttentionImpl::forward(const at::Tensor& x, const at::Tensor& context, plugin::DitKernels* fused) {
  const int64_t B = x.size(0), L = x.size(1), Lt = context.size(1);
  const int64_t H = options.num_heads, D = options.dim / options.num_heads;
  const auto dtype = q->dtype();
  auto normed = [&](WanRMSNorm& norm, const at::Tensor& y) {
    return fused ? fused->rms_norm_rope(y, norm->weight, norm->options.eps, {}, {}, H) : norm(y).to(dtype);
  };
  at::Tensor qh = normed(norm_q, q(x)).view({B, L, H, D});
  at::Tensor kh = normed(norm_k, k(context)).view({B, Lt, H, D});
  at::Tensor vh = v(context).view({B, Lt, H, D});
  return o(dense_attention(qh, kh, vh).reshape({B, L, H * D}));  // [B, L, dim]
}

}  // namespace vidgraph::wan
