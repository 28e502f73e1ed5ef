#include "wan_rope.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/complex.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <c10/util/Exception.h>

#include "models/wan/wan_layers.h"  // at_least_fp32

namespace vidgraph::wan {

std::array<int64_t, 3> rope_axis_pairs(int64_t head_dim) {
  const int64_t c = head_dim / 2;
  return {c - 2 * (c / 3), c / 3, c / 3};
}

namespace {

// Angles [n, pairs] float64 for positions 0..n-1 of one axis with `pairs` complex pairs.
at::Tensor axis_angles(int64_t n, int64_t pairs, double theta) {
  auto f64 = at::TensorOptions().dtype(at::kDouble);
  at::Tensor k = at::arange(pairs, f64);
  // theta^(-2k/d_axis) with d_axis = 2*pairs
  at::Tensor inv_freq = at::pow(theta, k.mul(-2.0 / static_cast<double>(2 * pairs)));
  return at::outer(at::arange(n, f64), inv_freq);
}

}  // namespace

RopeTables rope_tables(int64_t head_dim, const std::array<int64_t, 3>& grid, double theta, c10::Device device) {
  TORCH_CHECK(head_dim % 2 == 0 && head_dim >= 6, "RoPE head_dim must be even and >= 6, got ", head_dim);
  const auto pairs = rope_axis_pairs(head_dim);
  const int64_t F = grid[0], H = grid[1], W = grid[2];
  at::Tensor a_t = axis_angles(F, pairs[0], theta).view({F, 1, 1, pairs[0]}).expand({F, H, W, pairs[0]});
  at::Tensor ah = axis_angles(H, pairs[1], theta).view({1, H, 1, pairs[1]}).expand({F, H, W, pairs[1]});
  at::Tensor aw = axis_angles(W, pairs[2], theta).view({1, 1, W, pairs[2]}).expand({F, H, W, pairs[2]});
  at::Tensor angles = at::cat({a_t, ah, aw}, -1).reshape({F * H * W, head_dim / 2});  // [L, D/2]
  RopeTables t;
  t.cos = angles.cos().to(at::kFloat).to(device);
  t.sin = angles.sin().to(at::kFloat).to(device);
  t.rotation = at::complex(t.cos, t.sin);
  return t;
}

at::Tensor rope_apply(const at::Tensor& x, const RopeTables& tables) {
  TORCH_CHECK(x.dim() == 4, "rope_apply expects x [B, L, H, D], got ", x.sizes());
  const int64_t B = x.size(0), L = x.size(1), H = x.size(2), D = x.size(3);
  TORCH_CHECK(tables.cos.size(0) == L && tables.cos.size(1) == D / 2, "rope_apply: tables are for ", tables.cos.sizes(),
              " but x is ", x.sizes());
  // Interleaved pairs are (real, imaginary) parts: one complex multiply (a single pass over x)
  // gives (x0 c - x1 s, x0 s + x1 c).
  const at::Tensor xr = x.to(at_least_fp32(x.scalar_type())).contiguous();
  const at::Tensor xc = at::view_as_complex(xr.view({B, L, H, D / 2, 2}));
  const at::Tensor r = xc * tables.rotation.view({1, L, 1, D / 2});
  return at::view_as_real(r).view({B, L, H, D});  // [B, L, H, D] fp32
}

}  // namespace vidgraph::wan
