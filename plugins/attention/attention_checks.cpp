// Input checks. See attention_checks.h.
#include "plugins/attention/attention_checks.h"

#include <ATen/ops/isfinite.h>
#include <c10/util/Exception.h>

namespace vidgraph::attention {
namespace {

void check_qkv(const plugin::AttentionCall& c) {
  TORCH_CHECK(c.q.defined() && c.k.defined() && c.v.defined(), "method ", c.method,
              ": q, k and v must all be given");
  TORCH_CHECK(c.q.dim() == 4, "method ", c.method, ": q must be [B, S, H, D], got ", c.q.sizes());
  TORCH_CHECK(c.k.sizes() == c.q.sizes(), "method ", c.method, ": k must have the shape of q ", c.q.sizes(),
              ", got ", c.k.sizes());
  TORCH_CHECK(c.v.sizes() == c.q.sizes(), "method ", c.method, ": v must have the shape of q ", c.q.sizes(),
              ", got ", c.v.sizes());
  TORCH_CHECK(c.k.scalar_type() == c.q.scalar_type() && c.v.scalar_type() == c.q.scalar_type(), "method ",
              c.method, ": q, k and v must have the same dtype, got ", c.q.scalar_type(), ", ",
              c.k.scalar_type(), ", ", c.v.scalar_type());
  TORCH_CHECK(c.k.device() == c.q.device() && c.v.device() == c.q.device(), "method ", c.method,
              ": q, k and v must be on the same device, got ", c.q.device(), ", ", c.k.device(), ", ",
              c.v.device());
  TORCH_CHECK(at::isFloatingType(c.q.scalar_type()), "method ", c.method,
              ": q, k and v must be floating point, got ", c.q.scalar_type());
  TORCH_CHECK(c.q.size(0) > 0 && c.q.size(1) > 0 && c.q.size(2) > 0, "method ", c.method,
              ": B, S and H must be positive, got ", c.q.sizes());
  TORCH_CHECK(c.grid.t > 0 && c.grid.h > 0 && c.grid.w > 0, "method ", c.method,
              ": the token grid must be positive, got (", c.grid.t, ", ", c.grid.h, ", ", c.grid.w, ")");
  TORCH_CHECK(c.grid.size() > 0, "method ", c.method, ": the token grid (", c.grid.t, ", ", c.grid.h, ", ",
              c.grid.w, ") has more tokens than a 64-bit count holds; check the grid");
  TORCH_CHECK(c.grid.size() == c.q.size(1), "method ", c.method, ": the token grid (", c.grid.t, ", ",
              c.grid.h, ", ", c.grid.w, ") has ", c.grid.size(), " tokens but q has S = ", c.q.size(1));
}

void check_extras(const plugin::AttentionCall& c) {
  const int64_t b = c.q.size(0), s = c.q.size(1), h = c.q.size(2), d = c.q.size(3);
  const auto& g = c.extras.gate;
  if (g.defined()) {
    const bool ok = g.dim() == 4 && g.size(0) == b && g.size(1) == s && g.size(2) == h &&
                    (g.size(3) == d || g.size(3) == 1);
    TORCH_CHECK(ok, "method ", c.method, ": gate must be [", b, ", ", s, ", ", h, ", ", d, "] or [", b, ", ",
                s, ", ", h, ", 1], got ", g.sizes());
    TORCH_CHECK(g.device() == c.q.device(), "method ", c.method, ": gate must be on ", c.q.device(),
                ", got ", g.device());
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), "method ", c.method, ": gate must be floating point");
  }
  const auto& w = c.extras.proj_l_weight;
  if (w.defined()) {
    TORCH_CHECK(w.dim() == 2 && w.size(0) == d && w.size(1) == d, "method ", c.method,
                ": proj_l weight must be [", d, ", ", d, "], got ", w.sizes());
    TORCH_CHECK(w.device() == c.q.device(), "method ", c.method, ": proj_l weight must be on ", c.q.device());
  }
  const auto& bias = c.extras.proj_l_bias;
  if (bias.defined()) {
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == d, "method ", c.method, ": proj_l bias must be [", d,
                "], got ", bias.sizes());
    TORCH_CHECK(bias.device() == c.q.device(), "method ", c.method, ": proj_l bias must be on ", c.q.device());
  }
}

}  // namespace

void check_attention_call(const plugin::AttentionCall& call, DevicePath& path, int64_t tile_volume) {
  check_qkv(call);
  check_extras(call);
  std::string why;
  TORCH_CHECK(path.supports(call.q.size(3), tile_volume, call.q.scalar_type(), &why), "method ", call.method,
              " on ", path.name(), ": ", why);
  if (call.q.device().is_cpu()) {
    // Cheap on the CPU reference; on a GPU the coarse scores are checked instead (no extra sync).
    for (const auto* t : {&call.q, &call.k, &call.v})
      TORCH_CHECK(at::isfinite(*t).all().item<bool>(), "method ", call.method,
                  ": q, k and v must be finite (found NaN or infinite values)");
  }
}

}  // namespace vidgraph::attention
