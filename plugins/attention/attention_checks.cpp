// Input checks. See attention_checks.h.
#include "plugins/attention/attention_checks.h"

#include <ATen/ops/isfinite.h>
#include <c10/util/Exception.h>

namespace vidgraph::attention {
namespace {

void check_qkv(const plugin::AttentionCall& c, const PreparedState& p) {
  TORCH_CHECK(c.q.defined() && c.k.defined() && c.v.defined(), "method ", p.method,
              ": q, k and v must all be given");
  TORCH_CHECK(c.q.dim() == 4, "method ", p.method, ": q must be [B, S, H, D], got ", c.q.sizes());
  TORCH_CHECK(c.k.sizes() == c.q.sizes(), "method ", p.method, ": k must have the shape of q ", c.q.sizes(),
              ", got ", c.k.sizes());
  TORCH_CHECK(c.v.sizes() == c.q.sizes(), "method ", p.method, ": v must have the shape of q ", c.q.sizes(),
              ", got ", c.v.sizes());
  TORCH_CHECK(c.k.scalar_type() == c.q.scalar_type() && c.v.scalar_type() == c.q.scalar_type(), "method ",
              p.method, ": q, k and v must have the same dtype, got ", c.q.scalar_type(), ", ",
              c.k.scalar_type(), ", ", c.v.scalar_type());
  TORCH_CHECK(c.k.device() == c.q.device() && c.v.device() == c.q.device(), "method ", p.method,
              ": q, k and v must be on the same device, got ", c.q.device(), ", ", c.k.device(), ", ",
              c.v.device());
  TORCH_CHECK(at::isFloatingType(c.q.scalar_type()), "method ", p.method,
              ": q, k and v must be floating point, got ", c.q.scalar_type());
  TORCH_CHECK(c.q.size(0) > 0 && c.q.size(1) > 0 && c.q.size(2) > 0, "method ", p.method,
              ": B, S and H must be positive, got ", c.q.sizes());
  TORCH_CHECK(p.grid.size() == c.q.size(1), "method ", p.method, ": the token grid (", p.grid.t, ", ",
              p.grid.h, ", ", p.grid.w, ") has ", p.grid.size(), " tokens but q has S = ", c.q.size(1));
}

void check_extras(const plugin::AttentionCall& c, const PreparedState& p) {
  const int64_t b = c.q.size(0), s = c.q.size(1), h = c.q.size(2), d = c.q.size(3);
  const auto& g = c.extras.gate;
  if (g.defined()) {
    const bool ok = g.dim() == 4 && g.size(0) == b && g.size(1) == s && g.size(2) == h &&
                    (g.size(3) == d || g.size(3) == 1);
    TORCH_CHECK(ok, "method ", p.method, ": gate must be [", b, ", ", s, ", ", h, ", ", d, "] or [", b, ", ",
                s, ", ", h, ", 1], got ", g.sizes());
    TORCH_CHECK(g.device() == c.q.device(), "method ", p.method, ": gate must be on ", c.q.device(),
                ", got ", g.device());
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), "method ", p.method, ": gate must be floating point");
  }
  const auto& w = c.extras.proj_l_weight;
  if (w.defined()) {
    TORCH_CHECK(w.dim() == 2 && w.size(0) == d && w.size(1) == d, "method ", p.method,
                ": proj_l weight must be [", d, ", ", d, "], got ", w.sizes());
    TORCH_CHECK(w.device() == c.q.device(), "method ", p.method, ": proj_l weight must be on ", c.q.device());
  }
  const auto& bias = c.extras.proj_l_bias;
  if (bias.defined()) {
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == d, "method ", p.method, ": proj_l bias must be [", d,
                "], got ", bias.sizes());
    TORCH_CHECK(bias.device() == c.q.device(), "method ", p.method, ": proj_l bias must be on ", c.q.device());
  }
}

// The tensors against what was prepared.
void check_matches(const plugin::AttentionCall& c, const PreparedState& p) {
  TORCH_CHECK(c.q.device() == p.device && c.q.scalar_type() == p.dtype && c.q.size(3) == p.head_dim, "method ",
              p.method, ": q is ", c.q.scalar_type(), " on ", c.q.device(), " with head dim ", c.q.size(3),
              " but the attention was prepared for ", p.dtype, " on ", p.device, " with head dim ", p.head_dim,
              "; prepare it again for these tensors");
}

}  // namespace

void check_attention_call(const plugin::AttentionCall& call, const PreparedState& prepared) {
  check_qkv(call, prepared);
  check_matches(call, prepared);
  check_extras(call, prepared);
  if (call.q.device().is_cpu()) {
    // Cheap on the CPU reference; on a GPU the coarse scores are checked instead (no extra sync).
    for (const auto* t : {&call.q, &call.k, &call.v})
      TORCH_CHECK(at::isfinite(*t).all().item<bool>(), "method ", prepared.method,
                  ": q, k and v must be finite (found NaN or infinite values)");
  }
}

}  // namespace vidgraph::attention
