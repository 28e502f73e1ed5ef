// CPU block-sparse attention. See cpu_path.h and the semantics in device_path.h.
#include "plugins/attention/cpu_path.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <limits>

namespace vidgraph::attention {
namespace {

// Elements of one chunk's logits [B, H, c, V, topk*V] kept below this bound.
constexpr int64_t kChunkElements = int64_t(1) << 24;

at::ScalarType compute_type(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// KV tiles gathered for a chunk of query tiles, and the pad-key mask.
struct Gathered {
  at::Tensor flat_index;  // int64 [B*H*c*topk]: row in the [B*H*N, V, D] view
  at::Tensor k, v;        // [B, H, c, topk*V, D]
  at::Tensor valid;       // bool [B, H, c, 1, topk*V]
};

struct Dims {
  int64_t b, h, sp, d, n, v, topk;
};

Dims dims_of(const at::Tensor& q, const at::Tensor& q2k, int64_t tile_volume) {
  Dims d{q.size(0), q.size(1), q.size(2), q.size(3), q.size(2) / tile_volume, tile_volume, q2k.size(3)};
  return d;
}

int64_t chunk_tiles(const Dims& d) {
  const int64_t per_tile = d.b * d.h * d.v * d.topk * d.v + d.b * d.h * d.topk * d.v * d.d;
  return std::max<int64_t>(1, std::min(d.n, kChunkElements / std::max<int64_t>(1, per_tile)));
}

Gathered gather(const Dims& d, const at::Tensor& k_rows, const at::Tensor& v_rows, const at::Tensor& q2k,
                const at::Tensor& key_valid, int64_t n0, int64_t c) {
  Gathered g;
  // [B, H, c, topk] tile ids -> rows of the [B*H*N, V, D] view
  const at::Tensor ids = q2k.narrow(2, n0, c).to(at::kLong);
  const at::Tensor bh = at::arange(d.b * d.h, ids.options()).view({d.b, d.h, 1, 1}) * d.n;
  g.flat_index = (ids + bh).reshape({-1});
  g.k = k_rows.index_select(0, g.flat_index).view({d.b, d.h, c, d.topk * d.v, d.d});
  g.v = v_rows.index_select(0, g.flat_index).view({d.b, d.h, c, d.topk * d.v, d.d});
  g.valid = key_valid.index_select(0, ids.reshape({-1})).view({d.b, d.h, c, 1, d.topk * d.v});
  return g;
}

// Masked, scaled logits [B, H, c, V, topk*V].
at::Tensor logits(const at::Tensor& q_chunk, const Gathered& g, double scale) {
  return at::matmul(q_chunk, g.k.transpose(-1, -2)).mul_(scale).masked_fill_(
      g.valid.logical_not(), -std::numeric_limits<double>::infinity());
}

at::Tensor key_valid_mask(const at::Tensor& tile_sizes, int64_t n, int64_t v) {
  TORCH_CHECK(tile_sizes.numel() == n, "tile_sizes must have ", n, " entries, got ", tile_sizes.numel());
  return at::arange(v, at::kLong).unsqueeze(0) < tile_sizes.to(at::kLong).unsqueeze(1);  // [N, V]
}

}  // namespace

bool CpuPath::supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const {
  if (d < 1 || d > kCpuMaxHeadDim) {
    if (why) *why = "head dim " + std::to_string(d) + " is not supported on the CPU (1.." +
                    std::to_string(kCpuMaxHeadDim) + ")";
    return false;
  }
  if (tile_volume < 1) {
    if (why) *why = "tile volume must be positive";
    return false;
  }
  if (!at::isFloatingType(dtype)) {
    if (why) *why = std::string("dtype ") + c10::toString(dtype) + " is not a floating type";
    return false;
  }
  return true;
}

SparseForwardResult CpuPath::sparse_forward(const SparseForwardArgs& a) {
  const Dims d = dims_of(a.q, a.q2k, a.tile_volume);
  const at::ScalarType ct = compute_type(a.q.scalar_type());
  // [B, H, Sp, D] -> [B, H, N, V, D] and the [B*H*N, V, D] row view
  const at::Tensor q = a.q.to(ct).contiguous().view({d.b, d.h, d.n, d.v, d.d});
  const at::Tensor k_rows = a.k.to(ct).contiguous().view({d.b * d.h * d.n, d.v, d.d});
  const at::Tensor v_rows = a.v.to(ct).contiguous().view({d.b * d.h * d.n, d.v, d.d});
  const at::Tensor key_valid = key_valid_mask(a.tile_sizes, d.n, d.v);
  at::Tensor out = at::empty({d.b, d.h, d.n, d.v, d.d}, q.options());
  at::Tensor lse = at::empty({d.b, d.h, d.n, d.v}, q.options());
  const int64_t step = chunk_tiles(d);
  for (int64_t n0 = 0; n0 < d.n; n0 += step) {
    const int64_t c = std::min(step, d.n - n0);
    const Gathered g = gather(d, k_rows, v_rows, a.q2k, key_valid, n0, c);
    const at::Tensor s = logits(q.narrow(2, n0, c), g, a.scale);  // [B, H, c, V, topk*V]
    const at::Tensor m = at::logsumexp(s, -1, /*keepdim=*/true);     // [B, H, c, V, 1]
    const at::Tensor p = at::exp(s - m);
    out.narrow(2, n0, c).copy_(at::matmul(p, g.v));
    lse.narrow(2, n0, c).copy_(m.squeeze(-1));
  }
  return {out.view({d.b, d.h, d.sp, d.d}).to(a.q.scalar_type()), lse.view({d.b, d.h, d.sp})};
}

SparseBackwardResult CpuPath::sparse_backward(const SparseBackwardArgs& a) {
  const Dims d = dims_of(a.q, a.q2k, a.tile_volume);
  const at::ScalarType ct = compute_type(a.q.scalar_type());
  const auto tiles = [&](const at::Tensor& x) { return x.to(ct).contiguous().view({d.b, d.h, d.n, d.v, d.d}); };
  const at::Tensor q = tiles(a.q), dout = tiles(a.dout), out = tiles(a.out);
  const at::Tensor k_rows = a.k.to(ct).contiguous().view({d.b * d.h * d.n, d.v, d.d});
  const at::Tensor v_rows = a.v.to(ct).contiguous().view({d.b * d.h * d.n, d.v, d.d});
  const at::Tensor lse = a.lse.to(ct).view({d.b, d.h, d.n, d.v, 1});
  const at::Tensor key_valid = key_valid_mask(a.tile_sizes, d.n, d.v);
  // Delta = rowsum(dO * O): [B, H, N, V, 1]
  const at::Tensor delta = (dout * out).sum(-1, /*keepdim=*/true);
  at::Tensor dq = at::empty_like(q);
  at::Tensor dk_rows = at::zeros_like(k_rows), dv_rows = at::zeros_like(v_rows);
  const int64_t step = chunk_tiles(d);
  for (int64_t n0 = 0; n0 < d.n; n0 += step) {
    const int64_t c = std::min(step, d.n - n0);
    const Gathered g = gather(d, k_rows, v_rows, a.q2k, key_valid, n0, c);
    const at::Tensor qc = q.narrow(2, n0, c), doc = dout.narrow(2, n0, c);
    const at::Tensor p = at::exp(logits(qc, g, a.scale) - lse.narrow(2, n0, c));  // [B,H,c,V,topk*V]
    const at::Tensor dp = at::matmul(doc, g.v.transpose(-1, -2));
    const at::Tensor ds = p * (dp - delta.narrow(2, n0, c));
    dq.narrow(2, n0, c).copy_(at::matmul(ds, g.k).mul_(a.scale));
    // [B, H, c, topk*V, D] -> [B*H*c*topk, V, D] rows, accumulated into their KV tiles
    const at::Tensor dk_g = at::matmul(ds.transpose(-1, -2), qc).mul_(a.scale).reshape({-1, d.v, d.d});
    const at::Tensor dv_g = at::matmul(p.transpose(-1, -2), doc).reshape({-1, d.v, d.d});
    dk_rows.index_add_(0, g.flat_index, dk_g);
    dv_rows.index_add_(0, g.flat_index, dv_g);
  }
  const at::ScalarType t = a.q.scalar_type();
  return {dq.view({d.b, d.h, d.sp, d.d}).to(t), dk_rows.view({d.b, d.h, d.sp, d.d}).to(t),
          dv_rows.view({d.b, d.h, d.sp, d.d}).to(t)};
}

}  // namespace vidgraph::attention
