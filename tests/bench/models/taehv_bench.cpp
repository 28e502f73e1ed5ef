// Implements taehv_bench.h.
#include "taehv_bench.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <exception>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "bench_log.h"
#include "bench_timing.h"
#include "models/io/safetensors.h"
#include "models/vae/taehv.h"

namespace vidgraph::bench {
namespace {

using nlohmann::json;

// taew2_2's decoder keys and shapes (models/vae/taehv.h), N(0, 1/fan_in) weights.
model_io::NamedTensors taew2_2_random() {
  const std::vector<int64_t> w{256, 128, 64, 64};
  model_io::NamedTensors t;
  auto conv = [&](const std::string& name, int64_t out, int64_t in, int64_t k, bool bias) {
    t.emplace_back(name + ".weight", at::randn({out, in, k, k}) / std::sqrt(double(in * k * k)));
    if (bias) t.emplace_back(name + ".bias", at::randn({out}) * 0.05);
  };
  conv("decoder.1", w[0], 48, 3, true);
  const int first[3] = {3, 9, 15}, grow[3] = {7, 13, 19}, proj[3] = {8, 14, 20};
  const int64_t stride[3] = {1, 2, 2};
  for (int s = 0; s < 3; ++s) {
    for (int b = 0; b < 3; ++b) {
      const std::string p = "decoder." + std::to_string(first[s] + b) + ".conv.";
      conv(p + "0", w[s], 2 * w[s], 3, true);
      conv(p + "2", w[s], w[s], 3, true);
      conv(p + "4", w[s], w[s], 3, true);
    }
    conv("decoder." + std::to_string(grow[s]) + ".conv", w[s] * stride[s], w[s], 1, false);
    conv("decoder." + std::to_string(proj[s]), w[s + 1], w[s], 3, false);
  }
  conv("decoder.22", 12, w[3], 3, true);
  return t;
}

}  // namespace

json run_taehv_bench(const TaehvBenchOptions& o) {
  auto log = bench_logger();
  c10::NoGradGuard no_grad;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("vidgraph-taehv-bench-" + std::to_string(::getpid()) + ".safetensors")).string();
  model_io::save_safetensors(path, taew2_2_random());
  const auto decoder = vae::TaehvDecoder::load(path, o.device, o.dtype);
  std::filesystem::remove(path);
  const at::Tensor latent = at::randn({1, 48, o.latent_thw[0], o.latent_thw[1], o.latent_thw[2]},
                                      at::TensorOptions().device(o.device).dtype(at::kFloat));
  json chunks = json::object();
  for (int64_t chunk : o.chunk_frames) {
    log->info("TAEHV decode, {} latent frames per chunk", chunk);
    release_cached_memory(o.device);
    try {
      at::Tensor video;
      const RunStats s = time_runs(o.device, o.warmup, o.repeats, [&] {
        video = at::Tensor();
        video = decoder->decode(latent, {}, chunk, o.device);
      });
      json j = to_json(s, o.device);
      j["video"] = video.sizes().vec();
      chunks[std::to_string(chunk)] = j;
    } catch (const std::exception& e) {
      log->error("TAEHV decode failed: {}", e.what());
      chunks[std::to_string(chunk)] = json{{"error", e.what()}};
    }
  }
  return json{{"latent", {1, 48, o.latent_thw[0], o.latent_thw[1], o.latent_thw[2]}},
              {"dtype", c10::toString(o.dtype)},
              {"chunks", chunks}};
}

}  // namespace vidgraph::bench
