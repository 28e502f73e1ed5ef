// The VAE section of vidgraph-model-bench: decode of one latent video with random weights.
//
// For each dtype: a WanVae of `config` whose parameters are given fresh storage on the device in
// that dtype and random values there (bench_weights.h); a random normalised latent
// [1, z, T, h, w]; `warmup` untimed then `repeats` timed decodes (the causal chunk loop, one latent
// frame per chunk) -> video [1, 3, 1 + 4(T-1), 16h, 16w]; peak device memory (reset per variant).
// With `tiling`, the same decode is also timed spatially tiled (VaeDecodeOptions::tiling), its
// warm-up skipped: the untiled runs warmed the device already. With `fused` kernels that support
// the device and dtype, the untiled decode is also timed on them ("untiled_fused", with the rel-L2
// of its video to the ATen one's) and the tiled decode runs on them.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

#include "models/vae/vae_config.h"
#include "models/vae/wan_vae.h"

namespace vidgraph::bench {

struct VaeBenchOptions {
  vae::WanVaeConfig config = vae::WanVaeConfig::wan22();
  std::array<int64_t, 3> latent_thw{31, 44, 80};  // latent frames, height, width
  c10::Device device = c10::Device(c10::kCPU);
  std::vector<at::ScalarType> dtypes{at::kBFloat16};
  int warmup = 1;
  int repeats = 2;
  std::optional<vae::VaeTiling> tiling;  // also time a tiled decode
  plugin::VaeKernels* fused = nullptr;    // the plugin's (AttentionBackend::vae_kernels())
  // Polled before each variant: true skips it (recorded as {"skipped": "..."}).
  std::function<bool()> out_of_time;
};

// Returns {"latent": [...], "video": [...], "decode": {dtype: {"untiled": {...}, "tiled": {...},
// "weights_gib": ...}}}; a failing variant is {"error": "..."} and the rest still runs.
nlohmann::json run_vae_bench(const VaeBenchOptions& options);

}  // namespace vidgraph::bench
