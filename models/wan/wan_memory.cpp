#include "models/wan/wan_memory.h"

#include <algorithm>
#include <string>

#include <c10/core/ScalarType.h>

namespace vidgraph::wan {
namespace {

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
    int64_t n = 1;
    for (int64_t d : shape) {
      n *= d;
    }
    m.weight_bytes += n * (kept_fp32(name) ? 4 : cb);
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

}  // namespace vidgraph::wan
