// Dense float64-friendly references for the attention suites: token-space VSA (tile mask expanded to
// tokens, S x S), full softmax attention and the SLA* linear branch, all differentiable ATen, written
// independently of the plugin's tiling code. For tests only: they build S x S matrices.
#pragma once

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/one_hot.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace attention_reference {

// Tile index of every token of a (T, H, W) grid, tiles numbered T-major: int64 [S].
inline at::Tensor tile_ids(const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& tile) {
  const int64_t nh = (grid[1] + tile[1] - 1) / tile[1], nw = (grid[2] + tile[2] - 1) / tile[2];
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < grid[0]; ++t)
    for (int64_t h = 0; h < grid[1]; ++h)
      for (int64_t w = 0; w < grid[2]; ++w) ids.push_back(((t / tile[0]) * nh + h / tile[1]) * nw + w / tile[2]);
  return at::from_blob(ids.data(), {static_cast<int64_t>(ids.size())}, at::kLong).clone();
}

inline int64_t num_tiles(const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& tile) {
  int64_t n = 1;
  for (int a = 0; a < 3; ++a) n *= (grid[a] + tile[a] - 1) / tile[a];
  return n;
}

// Dense softmax attention with an optional bool mask [B, H, S, S]; q, k, v [B, S, H, D].
inline at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& mask = {}) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const at::Tensor qh = q.permute({0, 2, 1, 3}), kh = k.permute({0, 2, 1, 3}), vh = v.permute({0, 2, 1, 3});
  at::Tensor s = at::matmul(qh, kh.transpose(-1, -2)) * scale;
  if (mask.defined()) s = s.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(s, -1), vh).permute({0, 2, 1, 3});
}

struct VsaReference {
  at::Tensor out;         // [B, S, H, D]
  at::Tensor block_mask;  // bool [B, H, N, N]
  at::Tensor fine;        // [B, S, H, D]
  at::Tensor coarse;      // [B, S, H, D] (per-tile coarse output broadcast to tokens)
};

inline int64_t topk_for(double sparsity, int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(std::ceil((1.0 - sparsity) * n)), n));
}

// Token-space VSA: out = fine + coarse * gate (gate undefined: fine only).
inline VsaReference vsa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& gate,
                        const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& tile, double sparsity) {
  const int64_t b = q.size(0), h = q.size(2), n = num_tiles(grid, tile);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const at::Tensor ids = tile_ids(grid, tile);
  // [S, N] one-hot; tile means [B, H, N, D]
  const at::Tensor a = at::one_hot(ids, n).to(q.scalar_type());
  const at::Tensor counts = a.sum(0).unsqueeze(-1);
  const auto mean = [&](const at::Tensor& x) { return at::matmul(a.t(), x.permute({0, 2, 1, 3})) / counts; };
  const at::Tensor qc = mean(q), kc = mean(k), vc = mean(v);
  const at::Tensor scores = at::matmul(qc, kc.transpose(-1, -2)) * scale;  // [B, H, N, N]
  const int64_t topk = topk_for(sparsity, n);
  const at::Tensor sc = scores.detach().to(at::kDouble).contiguous();
  at::Tensor block = at::zeros({b, h, n, n}, at::kBool);
  const double* p = sc.data_ptr<double>();
  auto* m = block.data_ptr<bool>();
  for (int64_t row = 0; row < b * h * n; ++row) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return p[row * n + x] > p[row * n + y]; });
    for (int64_t i = 0; i < topk; ++i) m[row * n + order[i]] = true;
  }
  VsaReference r;
  r.block_mask = block;
  const at::Tensor token_mask = block.index_select(2, ids).index_select(3, ids);  // [B, H, S, S]
  r.fine = dense_attention(q, k, v, token_mask);
  r.coarse = at::matmul(at::softmax(scores, -1), vc).index_select(2, ids).permute({0, 2, 1, 3});
  r.out = gate.defined() ? r.fine + r.coarse * gate : r.fine;
  return r;
}

inline at::Tensor feature(const at::Tensor& x, const std::string& map) {
  if (map == "elu") return at::elu(x) + 1.0;
  if (map == "relu") return at::relu(x);
  return at::softmax(x, -1);
}

// o_lin [B, S, H, D] by its closed formula, written as explicit sums over tokens.
inline at::Tensor linear_branch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const std::string& map) {
  const at::Tensor fq = feature(q, map), fk = feature(k, map);
  // kv[b, h] = sum_s fk[b, s, h]^T v[b, s, h]: [B, H, D, D]; ksum [B, H, D]
  at::Tensor kv = at::zeros({q.size(0), q.size(2), q.size(3), q.size(3)}, q.options());
  at::Tensor ksum = at::zeros({q.size(0), q.size(2), q.size(3)}, q.options());
  for (int64_t s = 0; s < q.size(1); ++s) {
    const at::Tensor fks = fk.select(1, s), vs = v.select(1, s);  // [B, H, D]
    kv = kv + fks.unsqueeze(-1) * vs.unsqueeze(-2);
    ksum = ksum + fks;
  }
  const at::Tensor num = at::matmul(fq.unsqueeze(-2), kv.unsqueeze(1)).squeeze(-2);  // [B, S, H, D]
  const at::Tensor den = (fq * ksum.unsqueeze(1)).sum(-1, true) + 1e-5;
  return num / den;
}

}  // namespace attention_reference
