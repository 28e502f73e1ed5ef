// Implements vae_bench.h.
#include "vae_bench.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include <nlohmann/json.hpp>

#include <exception>
#include <string>

#include "bench_log.h"
#include "bench_timing.h"
#include "bench_weights.h"

namespace vidgraph::bench {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string dtype_key(at::ScalarType t) {
  return t == at::kBFloat16 ? "bf16" : t == at::kHalf ? "fp16" : t == at::kFloat ? "fp32" : c10::toString(t);
}

json time_decode(const VaeBenchOptions& o, const vae::WanVae& vae, const at::Tensor& latent, int warmup,
                 const vae::VaeDecodeOptions& decode_options, at::Tensor* keep = nullptr) {
  at::Tensor video;
  const RunStats s = time_runs(o.device, warmup, o.repeats, [&] {
    video = at::Tensor();  // the previous output must not count in this run's peak
    video = vae.decode(latent, {}, decode_options);
  });
  json j = to_json(s, o.device);
  j["video"] = video.sizes().vec();  // [1, 3, 1 + 4(T-1), 16h, 16w]
  if (keep) *keep = video.to(c10::Device(c10::kCPU));  // off the device: the next variant's peak is its own
  return j;
}

json bench_dtype(const VaeBenchOptions& o, at::ScalarType dtype) {
  auto log = bench_logger();
  c10::NoGradGuard no_grad;
  vae::WanVae vae(o.config);
  relocate_parameters(vae, at::TensorOptions().device(o.device).dtype(dtype));
  fill_random_parameters(vae);
  json j{{"weights_gib", double(parameter_bytes(vae)) / kGiB}};
  const at::Tensor latent = at::randn({1, o.config.z_dim, o.latent_thw[0], o.latent_thw[1], o.latent_thw[2]},
                                      at::TensorOptions().device(o.device).dtype(at::kFloat));
  auto variant = [&](const char* name, int warmup, const vae::VaeDecodeOptions& decode_options,
                     at::Tensor* keep = nullptr) {
    if (o.out_of_time && o.out_of_time()) {
      j[name] = json{{"skipped", "the --time-limit-s budget was spent before this variant"}};
      return;
    }
    log->info("VAE decode {} {} (latent {}x{}x{})", dtype_key(dtype), name, o.latent_thw[0], o.latent_thw[1],
              o.latent_thw[2]);
    release_cached_memory(o.device);
    try {
      j[name] = time_decode(o, vae, latent, warmup, decode_options, keep);
    } catch (const std::exception& e) {
      log->error("VAE decode {} {} failed: {}", dtype_key(dtype), name, e.what());
      j[name] = json{{"error", e.what()}};
    }
  };
  const bool fused = o.fused && o.fused->supports(o.device, dtype);
  j["fused_kernels"] = fused;
  at::Tensor aten_video, fused_video;
  variant("untiled", o.warmup, {}, fused ? &aten_video : nullptr);
  if (fused) {
    vae::VaeDecodeOptions on;
    on.fused = o.fused;
    variant("untiled_fused", 1, on, &fused_video);
    if (aten_video.defined() && fused_video.defined()) {
      const double rel = ((fused_video - aten_video).norm() / aten_video.norm()).item<double>();
      j["untiled_fused"]["rel_l2_to_untiled"] = rel;
    }
    aten_video = fused_video = at::Tensor();
  }
  if (o.tiling) {
    vae::VaeDecodeOptions tiled;
    tiled.tiling = o.tiling;
    tiled.fused = fused ? o.fused : nullptr;
    variant("tiled", 0, tiled);
    j["tiled"]["tiling"] =
        json{{"tile_h", o.tiling->tile_h}, {"tile_w", o.tiling->tile_w}, {"overlap", o.tiling->overlap}};
  }
  return j;
}

}  // namespace

json run_vae_bench(const VaeBenchOptions& o) {
  json decode = json::object();
  for (at::ScalarType dtype : o.dtypes) {
    try {
      decode[dtype_key(dtype)] = bench_dtype(o, dtype);
    } catch (const std::exception& e) {
      bench_logger()->error("VAE {} failed: {}", dtype_key(dtype), e.what());
      decode[dtype_key(dtype)] = json{{"error", e.what()}};
    }
    release_cached_memory(o.device);
  }
  return json{{"config", {{"z_dim", o.config.z_dim}, {"decoder_dim", o.config.decoder_dim}}},
              {"latent", {1, o.config.z_dim, o.latent_thw[0], o.latent_thw[1], o.latent_thw[2]}},
              {"decode", decode}};
}

}  // namespace vidgraph::bench
