// The light-decoder section of vidgraph-model-bench (--taehv): TAEHV (taew2_2 layout, random
// weights written to a temporary safetensors file and loaded as a user's file would be) decoding
// the same latent as the VAE section, per chunk size: `warmup` untimed then `repeats` timed decodes
// (output kept on the device), peak device memory per variant.
#pragma once

#include <array>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

namespace vidgraph::bench {

struct TaehvBenchOptions {
  std::array<int64_t, 3> latent_thw{31, 44, 80};
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kHalf;  // the reference's GPU dtype
  std::vector<int64_t> chunk_frames{4, 31};
  int warmup = 1;
  int repeats = 3;
};

// {"latent": [...], "dtype": "fp16", "chunks": {"4": {...timing, "video": [...]}, ...}}; a failing
// variant is {"error": "..."}.
nlohmann::json run_taehv_bench(const TaehvBenchOptions& options);

}  // namespace vidgraph::bench
