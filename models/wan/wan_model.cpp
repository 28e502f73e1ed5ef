#include "models/wan/wan_model.h"

#include <optional>
#include <string>

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include "models/parallel/sequence_parallel.h"
#include "models/wan/wan_block_swap.h"

namespace vidgraph::wan {

at::Tensor sinusoidal_embedding(const at::Tensor& t, int64_t dim) {
  TORCH_CHECK(dim % 2 == 0, "sinusoidal_embedding needs an even dim, got ", dim);
  const int64_t half = dim / 2;
  auto f64 = at::TensorOptions().dtype(at::kDouble).device(t.device());
  at::Tensor freqs = at::pow(10000.0, at::arange(half, f64).div(static_cast<double>(half)).neg());
  at::Tensor args = t.to(at::kDouble).unsqueeze(-1) * freqs;  // [..., half]
  return at::cat({args.cos(), args.sin()}, -1).to(at::kFloat);
}

at::Tensor patchify(const at::Tensor& x, const std::array<int64_t, 3>& p) {
  const int64_t B = x.size(0), C = x.size(1);
  const int64_t F = x.size(2) / p[0], H = x.size(3) / p[1], W = x.size(4) / p[2];
  return x.reshape({B, C, F, p[0], H, p[1], W, p[2]})
      .permute({0, 2, 4, 6, 1, 3, 5, 7})  // [B, F, H, W, C, pt, ph, pw]
      .reshape({B, F * H * W, C * p[0] * p[1] * p[2]});
}

at::Tensor unpatchify(const at::Tensor& y, const std::array<int64_t, 3>& g, const std::array<int64_t, 3>& p,
                      int64_t C) {
  const int64_t B = y.size(0);
  return y.reshape({B, g[0], g[1], g[2], p[0], p[1], p[2], C})
      .permute({0, 7, 1, 4, 2, 5, 3, 6})  // [B, C, F, pt, H, ph, W, pw]
      .reshape({B, C, g[0] * p[0], g[1] * p[1], g[2] * p[2]});
}

WanPatchEmbeddingImpl::WanPatchEmbeddingImpl(const WanConfig& config_, const at::TensorOptions& opts)
    : config(config_), compute_options(opts) {
  reset();
}

void WanPatchEmbeddingImpl::reset() {
  const auto& p = config.patch_size;
  weight = register_parameter("weight", at::empty({config.dim, config.in_dim, p[0], p[1], p[2]}, compute_options),
                              /*requires_grad=*/false);
  bias = register_parameter("bias", at::empty({config.dim}, compute_options), /*requires_grad=*/false);
}

at::Tensor WanPatchEmbeddingImpl::forward(const at::Tensor& x) {
  at::Tensor tokens = patchify(x.to(weight.scalar_type()), config.patch_size);  // [B, L, C*pv]
  return at::linear(tokens, weight.reshape({config.dim, -1}), bias);            // [B, L, dim]
}

WanTimeProjectionImpl::WanTimeProjectionImpl(int64_t dim_, const at::TensorOptions& opts)
    : dim(dim_), fp32_options(opts) {
  reset();
}

void WanTimeProjectionImpl::reset() {
  WanLinearOptions o(dim, 6 * dim);
  o.tensor_options = fp32_options;
  fc1 = register_module("1", WanLinear(o));
}

at::Tensor WanTimeProjectionImpl::forward(const at::Tensor& e) {
  return fc1(at::silu(e)).to(at_least_fp32(e.scalar_type()));
}

WanHeadImpl::WanHeadImpl(const WanConfig& config_, const at::TensorOptions& compute, const at::TensorOptions& fp32)
    : config(config_), compute_options(compute), fp32_options(fp32) {
  reset();
}

void WanHeadImpl::reset() {
  modulation = register_parameter("modulation", at::empty({1, 2, config.dim}, fp32_options),
                                  /*requires_grad=*/false);
  WanNormOptions n(config.dim);
  n.eps = config.eps;
  n.affine = false;
  norm = register_module("norm", WanLayerNorm(n));
  WanLinearOptions o(config.dim, config.out_dim * config.patch_volume());
  o.tensor_options = compute_options;
  head = register_module("head", WanLinear(o));
}

at::Tensor WanHeadImpl::forward(const at::Tensor& x, const at::Tensor& e) {
  const at::ScalarType acc = at_least_fp32(x.scalar_type());
  at::Tensor m = modulation.to(acc).unsqueeze(0) + e.unsqueeze(2);  // [B, G, 2, dim]
  return head(modulate_groups(norm(x), m.select(2, 0), m.select(2, 1))).to(acc);
}

WanModelImpl::WanModelImpl(const WanModelOptions& options_) : options(options_) {
  reset();
}

void WanModelImpl::reset() {
  const WanConfig& c = options.config;
  c.validate();
  TORCH_CHECK(options.compute_dtype == at::kFloat || options.compute_dtype == at::kBFloat16 ||
                  options.compute_dtype == at::kHalf,
              "WanModel compute dtype must be float32, bfloat16 or float16, got ", options.compute_dtype);
  TORCH_CHECK(!options.device.is_cuda() || at::hasCUDA(), "WanModel: device ", options.device,
              " was requested, but this LibTorch build has no GPU support or no GPU is visible.");
  auto compute = at::TensorOptions().device(options.device).dtype(options.compute_dtype);
  auto fp32 = at::TensorOptions().device(options.device).dtype(at::kFloat);
  patch_embedding = register_module("patch_embedding", WanPatchEmbedding(c, compute));
  text_embedding = register_module("text_embedding",
                                   WanMlp(WanMlpOptions{c.text_dim, c.dim, c.dim, MlpActivation::GeluTanh, compute}));
  time_embedding =
      register_module("time_embedding", WanMlp(WanMlpOptions{c.freq_dim, c.dim, c.dim, MlpActivation::Silu, fp32}));
  time_projection = register_module("time_projection", WanTimeProjection(c.dim, fp32));
  TORCH_CHECK(options.offload_blocks >= 0 && options.offload_blocks <= c.num_layers, "WanModel: offload_blocks ",
              options.offload_blocks, " is outside 0..", c.num_layers, " (the model has ", c.num_layers, " blocks).");
  blocks = register_module("blocks", torch::nn::ModuleList());
  const int64_t first_offloaded = c.num_layers - options.offload_blocks;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const bool host = i >= first_offloaded;
    blocks->push_back(WanAttentionBlock(WanBlockOptions{c, host ? compute.device(c10::kCPU) : compute,
                                                        host ? fp32.device(c10::kCPU) : fp32}));
  }
  head = register_module("head", WanHead(c, compute, fp32));
  rope_cache_ = std::make_shared<RopeCache>();
}

RopeTables WanModelImpl::rope_for(const std::array<int64_t, 3>& grid) {
  std::lock_guard<std::mutex> lock(rope_cache_->mutex);
  auto& tables = rope_cache_->tables;
  auto it = tables.find(grid);
  if (it == tables.end()) {
    if (tables.size() > 8) {
      tables.clear();
    }
    it = tables.emplace(grid, rope_tables(options.config.head_dim(), grid, options.config.rope_theta, options.device))
             .first;
  }
  return it->second;
}

at::Tensor WanModelImpl::embed_text(const at::Tensor& context) {
  const WanConfig& c = options.config;
  TORCH_CHECK(context.dim() == 3 && context.size(2) == c.text_dim, "WanModel: context must be [B, l, ", c.text_dim,
              "], got ", context.sizes());
  TORCH_CHECK(context.size(1) <= c.text_len, "WanModel: context has ", context.size(1), " tokens, more than text_len ",
              c.text_len);
  at::Tensor ctx = context.to(options.device);
  if (ctx.size(1) < c.text_len) {
    at::Tensor pad = at::zeros({ctx.size(0), c.text_len - ctx.size(1), c.text_dim}, ctx.options());
    ctx = at::cat({ctx, pad}, 1);
  }
  return text_embedding(ctx);  // [B, text_len, dim]
}

std::pair<at::Tensor, at::Tensor> WanModelImpl::embed_time(const at::Tensor& t) {
  const int64_t dim = options.config.dim;
  at::Tensor e = time_embedding(sinusoidal_embedding(t.to(options.device), options.config.freq_dim));
  e = e.to(at_least_fp32(e.scalar_type()));                                 // [B, G, dim]
  at::Tensor e0 = time_projection(e).view({t.size(0), t.size(1), 6, dim});  // [B, G, 6, dim]
  return {e, e0};
}

DitTokens WanModelImpl::embed(const at::Tensor& x, const at::Tensor& t, const at::Tensor& context,
                               const AttentionRun& run) {
  const WanConfig& c = options.config;
  const auto& p = c.patch_size;
  TORCH_CHECK(x.dim() == 5 && x.size(1) == c.in_dim, "WanModel: x must be [B, ", c.in_dim, ", F, H, W], got ",
              x.sizes());
  TORCH_CHECK(x.size(2) % p[0] == 0 && x.size(3) % p[1] == 0 && x.size(4) % p[2] == 0,
              "WanModel: x frames/height/width ", x.sizes(), " are not multiples of the patch (", p[0], ", ", p[1],
              ", ", p[2], ")");
  const int64_t B = x.size(0);
  DitTokens in;
  in.grid = {x.size(2) / p[0], x.size(3) / p[1], x.size(4) / p[2]};
  in.tokens = in.grid[0] * in.grid[1] * in.grid[2];
  const int64_t L = in.tokens;
  at::Tensor tg = t.dim() == 1 ? t.unsqueeze(1) : t;  // [B, G]
  TORCH_CHECK(tg.dim() == 2 && tg.size(0) == B && tg.size(1) > 0 && L % tg.size(1) == 0,
              "WanModel: t must be [B], [B, frames] or [B, tokens] with B = ", B, " and a group count dividing ", L,
              " tokens, got ", t.sizes());
  TORCH_CHECK(context.size(0) == B, "WanModel: context batch ", context.size(0), " != x batch ", B);

  parallel::SequenceParallel* sp = run.sequence_parallel;
  if (sp != nullptr) sp->check_heads(c.num_heads);  // before any work

  in.rope = rope_for(in.grid);
  std::tie(in.e, in.e0) = embed_time(tg);
  in.context = embed_text(context);
  in.h = patch_embedding(x.to(options.device));
  in.h = in.h.to(at_least_fp32(in.h.scalar_type()));  // [B, L, dim] fp32
  if (sp != nullptr) {
    // This rank keeps its slice of the tokens, with their RoPE rows and modulation, up to the head.
    const RopeTables& r = in.rope;
    in.rope = RopeTables{sp->shard(r.cos, 0, L), sp->shard(r.sin, 0, L), sp->shard(r.rotation, 0, L)};
    in.e = sp->shard_groups(in.e, L);
    in.e0 = sp->shard_groups(in.e0, L);
    in.h = sp->shard(in.h, 1, L);
  }
  return in;
}

at::Tensor WanModelImpl::finish(const DitTokens& in, const AttentionRun& run) {
  at::Tensor y = head(in.h, in.e);  // [B, L (or this rank's tokens), out_dim * pv]
  if (run.sequence_parallel != nullptr) y = run.sequence_parallel->gather(y, in.tokens);
  return unpatchify(y, in.grid, options.config.patch_size, options.config.out_dim);  // [B, out_dim, F, H, W] fp32
}

at::Tensor WanModelImpl::forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& context,
                                 const AttentionRun& run) {
  DitTokens in = embed(x, t, context, run);
  std::unique_lock<std::mutex> swap_lock;
  std::optional<BlockSwap> swap;
  const std::size_t first_offloaded = blocks->size() - static_cast<std::size_t>(options.offload_blocks);
  if (options.offload_blocks > 0) {
    TORCH_CHECK(!at::GradMode::is_enabled() || !blocks->ptr(first_offloaded)->parameters().front().requires_grad(),
                "WanModel: block swap (offload_blocks) is for sampling; load the model without it to train.");
    swap_lock = std::unique_lock<std::mutex>(*swap_mutex_);
    swap.emplace(blocks, first_offloaded, options.device);
  }
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    if (swap) swap->enter(i);
    in.h = blocks->ptr(i)->as<WanAttentionBlockImpl>()->forward(in.h, in.e0, in.context, in.grid, in.rope, run);
    if (swap) swap->leave(i);
  }
  return finish(in, run);
}

std::vector<std::pair<std::string, at::Tensor>> wan_named_parameters(WanModelImpl& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

std::map<std::string, WanLinearImpl*> wan_linears_by_weight(WanModelImpl& model) {
  std::map<std::string, WanLinearImpl*> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (auto* linear = item.value()->as<WanLinearImpl>()) out[item.key() + ".weight"] = linear;
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> wan_named_weights(WanModelImpl& model) {
  const auto linears = wan_linears_by_weight(model);
  std::vector<std::pair<std::string, at::Tensor>> out = wan_named_parameters(model);
  for (auto& [name, tensor] : out) {
    if (const auto it = linears.find(name); it != linears.end()) tensor = it->second->dense_weight();
  }
  return out;
}

}  // namespace vidgraph::wan
