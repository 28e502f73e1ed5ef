// WanModel: the Wan2.x DiT (wan/modules/model.py WanModel) with the submodule tree of the official
// checkpoint: patch_embedding, text_embedding.{0,2}, time_embedding.{0,2}, time_projection.1,
// blocks.N.*, head.{modulation,head}. Built on one device with matmul weights in the compute dtype
// (bf16/fp16 on GPU, fp32 on CPU) and everything numerically sensitive in fp32 (time MLPs,
// modulation tables, norms, proj_l). Parameters start uninitialised: load them
// (wan_checkpoint.h) or fill them (wan_init_weights).
//
// forward contract:
//   x        [B, in_dim, F, H, W] (F, H, W multiples of the patch), any float dtype
//   t        [B] (one timestep), [B, G] (per token group: G = F/patch_t latent frames for the
//            per-frame path, or G = L tokens), float timesteps in [0, 1000]
//   context  [B, l, text_dim], l <= text_len: the text encoder output, zero-padded here to text_len
//   run      the self-attention backend and its preparation for this grid (AttentionChoice::prepare)
//   -> [B, out_dim, F, H, W] fp32 (the flow velocity)
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include "models/wan/wan_attention.h"
#include "models/wan/wan_block.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_layers.h"
#include "models/wan/wan_rope.h"

namespace vidgraph::wan {

struct WanModelOptions {
  WanConfig config;
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType compute_dtype = at::kFloat;  // matmul weights: kFloat, kBFloat16 or kHalf
  // Block swap (wan_block_swap.h): the last N blocks keep their weights in host memory and are
  // streamed to `device` as they run. For sampling; training refuses it. 0..num_layers.
  int64_t offload_blocks = 0;
};

// Sinusoidal timestep embedding: t [...] -> [..., dim] fp32, cat[cos(t f), sin(t f)],
// f_k = 10000^(-k/(dim/2)); computed in float64.
at::Tensor sinusoidal_embedding(const at::Tensor& t, int64_t dim);

// Patchify: x [B, C, F, H, W] -> [B, L, C*pt*ph*pw] with tokens f-major then h then w and each
// token's features ordered (c, pt, ph, pw) as a Conv3d weight flattens.
at::Tensor patchify(const at::Tensor& x, const std::array<int64_t, 3>& patch);
// Inverse of the head layout: y [B, L, pt*ph*pw*C] (channel fastest) with grid (F', H', W')
// -> [B, C, F'*pt, H'*ph, W'*pw].
at::Tensor unpatchify(const at::Tensor& y, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch,
                      int64_t channels);

// patch_embedding: Conv3d(in_dim, dim, kernel = stride = patch) computed as a matmul over patches;
// parameters `weight` [dim, in_dim, pt, ph, pw] (compute dtype), `bias` [dim].
class WanPatchEmbeddingImpl : public torch::nn::Cloneable<WanPatchEmbeddingImpl> {
 public:
  WanPatchEmbeddingImpl(const WanConfig& config, const at::TensorOptions& compute_options);
  void reset() override;
  // x: [B, in_dim, F, H, W] -> [B, L, dim] in the weight dtype
  at::Tensor forward(const at::Tensor& x);
  WanConfig config;
  at::TensorOptions compute_options;
  at::Tensor weight, bias;
};
TORCH_MODULE(WanPatchEmbedding);

// time_projection: SiLU then Linear "1".
class WanTimeProjectionImpl : public torch::nn::Cloneable<WanTimeProjectionImpl> {
 public:
  WanTimeProjectionImpl(int64_t dim, const at::TensorOptions& fp32_options);
  void reset() override;
  at::Tensor forward(const at::Tensor& e);  // [..., dim] -> [..., 6*dim] fp32
  int64_t dim;
  at::TensorOptions fp32_options;
  WanLinear fc1{nullptr};
};
TORCH_MODULE(WanTimeProjection);

// head: modulation [1, 2, dim] fp32 + Linear "head" (dim -> out_dim * patch volume).
class WanHeadImpl : public torch::nn::Cloneable<WanHeadImpl> {
 public:
  WanHeadImpl(const WanConfig& config, const at::TensorOptions& compute_options, const at::TensorOptions& fp32_options);
  void reset() override;
  // x: [B, L, dim] fp32, e: [B, G, dim] fp32 -> [B, L, out_dim * patch volume] fp32
  at::Tensor forward(const at::Tensor& x, const at::Tensor& e);
  WanConfig config;
  at::TensorOptions compute_options, fp32_options;
  at::Tensor modulation;
  WanLayerNorm norm{nullptr};
  WanLinear head{nullptr};
};
TORCH_MODULE(WanHead);

// The blocks' inputs, from WanModelImpl::embed: the hidden tokens h [B, L', dim] fp32, the time
// modulation e [B, G', dim] and e0 [B, G', 6, dim] fp32, the embedded text context [B, text_len,
// dim], the RoPE rows of the tokens, the token grid and its token count L. Sequence-parallel, L' and
// the per-token tables are this rank's share; otherwise L' = L.
struct DitTokens {
  at::Tensor h, e, e0, context;
  RopeTables rope;
  std::array<int64_t, 3> grid{};
  int64_t tokens = 0;
};

class WanModelImpl : public torch::nn::Cloneable<WanModelImpl> {
 public:
  explicit WanModelImpl(const WanModelOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& context, const AttentionRun& run);
  // forward = embed, every block, finish: for callers that run the blocks themselves (gradient
  // checkpointing). embed checks the inputs as forward does; finish runs the head on in.h (and
  // gathers every rank's tokens when sequence-parallel) and returns forward's result.
  DitTokens embed(const at::Tensor& x, const at::Tensor& t, const at::Tensor& context, const AttentionRun& run);
  at::Tensor finish(const DitTokens& in, const AttentionRun& run);

  // Text conditioning alone: context [B, l, text_dim] -> [B, text_len, dim] (zero-padded rows
  // become the embedding of zero, as in the reference).
  at::Tensor embed_text(const at::Tensor& context);
  // Time conditioning alone: t [B, G] -> e [B, G, dim] and e0 [B, G, 6, dim], fp32.
  std::pair<at::Tensor, at::Tensor> embed_time(const at::Tensor& t);

  const WanConfig& config() const { return options.config; }
  c10::Device device() const { return options.device; }
  at::ScalarType compute_dtype() const { return options.compute_dtype; }

  WanModelOptions options;
  WanPatchEmbedding patch_embedding{nullptr};
  WanMlp text_embedding{nullptr};
  WanMlp time_embedding{nullptr};
  WanTimeProjection time_projection{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  WanHead head{nullptr};

 private:
  RopeTables rope_for(const std::array<int64_t, 3>& grid);  // cached per grid
  struct RopeCache {
    std::mutex mutex;
    std::map<std::array<int64_t, 3>, RopeTables> tables;
  };
  std::shared_ptr<RopeCache> rope_cache_ = std::make_shared<RopeCache>();
  // Block swap moves weights in and out: one forward at a time on a model that offloads.
  std::shared_ptr<std::mutex> swap_mutex_ = std::make_shared<std::mutex>();
};
TORCH_MODULE(WanModel);

// Name of every parameter of `model` (canonical = official checkpoint keys) with its tensor.
std::vector<std::pair<std::string, at::Tensor>> wan_named_parameters(WanModelImpl& model);

// Every WanLinear of `model`, by the name of its weight parameter ("blocks.0.ffn.0.weight").
std::map<std::string, WanLinearImpl*> wan_linears_by_weight(WanModelImpl& model);

// wan_named_parameters with fp8-kept weights looked up to floats: the values writers save.
std::vector<std::pair<std::string, at::Tensor>> wan_named_weights(WanModelImpl& model);

}  // namespace vidgraph::wan
