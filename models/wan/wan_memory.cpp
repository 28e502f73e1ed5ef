#include "models/wan/wan_memory.h"

#include <algorithm>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace vidgraph::wan {
namespace {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return n;
}

// The block index of "blocks.<i>.…", or -1 for the parameters outside the blocks.
int64_t block_index(const std::string& name) {
  if (name.rfind("blocks.", 0) != 0) return -1;
  return std::stoll(name.substr(7, name.find('.', 7) - 7));
}

bool kept_fp32(const std::string& name) {
  return name.find("modulation") != std::string::npos || name.find("norm") != std::string::npos ||
         name.rfind("time_embedding.", 0) == 0 || name.rfind("time_projection.", 0) == 0 ||
         name.find(".proj_l.") != std::string::npos;
}

}  // namespace

WanMemoryEstimate wan_estimate_memory(const WanConfig& c, at::ScalarType compute_dtype,
                                      const std::array<int64_t, 3>& latent_fhw, int64_t batch) {
  const int64_t cb = static_cast<int64_t>(c10::elementSize(compute_dtype));
  WanMemoryEstimate m;
  for (const auto& [name, shape] : c.parameter_shapes()) {
    m.weight_bytes += element_count(shape) * (kept_fp32(name) ? 4 : cb);
  }
  const auto& p = c.patch_size;
  const int64_t tokens = batch * (latent_fhw[0] / p[0]) * (latent_fhw[1] / p[1]) * (latent_fhw[2] / p[2]);
  const int64_t row32 = tokens * c.dim * 4;  // one [B, L, dim] fp32 tensor
  const int64_t rowc = tokens * c.dim * cb;  // one [B, L, dim] compute-dtype tensor
  const int64_t residual = 2 * row32;
  const int64_t attention = row32 + 4 * rowc + 2 * row32;
  const int64_t ffn = row32 + rowc + 2 * tokens * c.ffn_dim * cb;
  const int64_t context = batch * c.text_len * (c.text_dim + c.dim) * 4;
  m.activation_bytes = residual + std::max(attention, ffn) + context;
  return m;
}

WanLoadBytes wan_estimate_load(const WanCheckpointInfo& info, const WanLoadOptions& options) {
  const WanConfig& c = info.config;
  const int64_t cb = static_cast<int64_t>(c10::elementSize(options.compute_dtype));
  const int64_t first_offloaded = c.num_layers - options.offload_blocks;
  WanLoadBytes bytes;
  for (const auto& [name, shape] : c.parameter_shapes()) {
    int64_t element_bytes = kept_fp32(name) ? 4 : cb;
    if (options.keep_fp8) {
      const auto source = info.tensors.find(name);
      const bool linear_weight = shape.size() == 2 && name.size() > 7 && name.rfind(".weight") == name.size() - 7;
      if (linear_weight && source != info.tensors.end() && source->second.dtype.rfind("F8", 0) == 0) element_bytes = 1;
    }
    const bool on_host = !options.device.is_cpu() && block_index(name) >= first_offloaded;
    (on_host ? bytes.host : bytes.device) += element_count(shape) * element_bytes;
  }
  return bytes;
}

}  // namespace vidgraph::wan
