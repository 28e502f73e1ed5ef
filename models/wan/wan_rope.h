// 3D rotary position embedding of the Wan DiT (wan/modules/model.py rope_params/rope_apply).
//
// head_dim D splits into D/2 complex pairs: t gets c - 2*(c/3) pairs, h and w get c/3 each
// (c = D/2; 22/21/21 for D = 128). Pair k of an axis with d_axis real dims turns by
// angle = pos * theta^(-2k/d_axis), pos = the token's 0-based patch index on that axis. Pairs are
// interleaved (x[2i], x[2i+1]), not rotate-half. Tables are built in float64 and stored fp32.
#pragma once

#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vidgraph::wan {

struct RopeTables {
  at::Tensor cos;       // [L, D/2] fp32, token order f-major, then h, then w
  at::Tensor sin;       // [L, D/2] fp32
  at::Tensor rotation;  // [L, D/2] complex64 cos + i sin: rope_apply is one complex multiply
};

// Number of complex pairs per axis (t, h, w) for a head dim.
std::array<int64_t, 3> rope_axis_pairs(int64_t head_dim);

// Tables for a token grid (F, H', W') (patch units).
RopeTables rope_tables(int64_t head_dim, const std::array<int64_t, 3>& grid, double theta, c10::Device device);

// x: [B, L, H, D] any float -> [B, L, H, D] fp32, each interleaved pair rotated by its angle.
at::Tensor rope_apply(const at::Tensor& x, const RopeTables& tables);

}  // namespace vidgraph::wan
