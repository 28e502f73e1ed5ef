// The DiT section of vidgraph-model-bench: one WanModel forward per attention method, and where its
// time goes.
//
// The model is built at `config` on `device` in `dtype` (matmuls; norms, modulation and the residual
// stream stay fp32 by the model's own policy) with the sparse extras (to_gate_compress, proj_l) in
// every block, all filled with random values on the device (bench_weights.h), so vsa's gated coarse
// branch and sla_star's linear branch both run. Inputs: x [1, in_dim, F*pt, H*ph, W*pw] for the
// token grid (F, H, W), t per latent frame [1, F] (700, frame 0 at 0 as for image-to-video),
// context [1, text_len, text_dim], all random. Forwards run in inference mode, as the sampler's do,
// so the blocks' norms, RoPE and gated residuals run on the backend's fused kernels where it has
// them; then every method again on the blocks' ATen ops ("aten_elementwise"), the same run's peer.
//
// Methods: the plugin's methods by name ("full", "vsa", "sla_star"; sparse ones at `sparsity`) and
// "libtorch_dense": the model's own dense attention (at::scaled_dot_product_attention on [B,H,S,D]
// with LibTorch >= 2, a chunked matmul/softmax before) in place of the plugin, as a same-run peer.
//
// Breakdown, timed apart at the same shapes: the num_layers self-attention calls of a method on
// random q, k, v [1, L, H, D] (plus gate and each block's proj_l for sparse methods); the GEMMs of
// every block (self q/k/v/o, cross q/o over L tokens and k/v over text_len tokens, FFN in and out);
// the to_gate_compress GEMMs apart. other = forward - attention - GEMMs (norms, modulation, RoPE,
// casts, GELU, cross-attention softmax, embeddings, head).
#pragma once

#include <array>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

#include "models/wan/wan_config.h"
#include "plugins/api/attention_backend.h"

namespace vidgraph::bench {

struct DitBenchOptions {
  wan::WanConfig config;
  std::array<int64_t, 3> grid{31, 22, 40};  // latent tokens after patchify (F, H, W)
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kBFloat16;
  std::vector<std::string> methods{"full", "vsa", "sla_star"};
  double sparsity = 0.875;
  int warmup = 1;
  int repeats = 5;
  std::vector<int64_t> offload_blocks;  // block swap runs of methods[0], after everything else
  int expert_swaps = 0;  // expert switches timed with a second expert (experts_on_gpu=active)
  bool fp8_weights = false;  // then every method again with the linears kept as fp8 codes (keep_fp8)
  bool fused_elementwise = true;  // the backend's fused DiT kernels where it has them
};

// The method name of the LibTorch dense peer.
inline constexpr char kLibtorchDense[] = "libtorch_dense";

// Runs the section; `backend` serves the plugin methods. Failures of one method or piece are
// recorded as {"error": "..."} in its place and the rest still runs. Returns
// {"model": {...}, "inputs": {...}, "methods": {name: {median_ms, min_ms, max_ms, runs, peak_gib,
// finite, ...}}, "fused_elementwise": bool, "aten_elementwise": {name: {...}} when fused,
// "breakdown": {...}, "block_swap": {N: {median_ms, peak_gib, ...}} when asked,
// "expert_swap": {weights_gib, to_host: {first_ms, median_ms, gib_per_s}, to_device: {...}} when asked}.
nlohmann::json run_dit_bench(const DitBenchOptions& options, plugin::AttentionBackend& backend);

}  // namespace vidgraph::bench
