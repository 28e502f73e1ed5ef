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
#include <atomic>
#include <limits>
#include <vector>

namespace vidgraph::attention {
namespace {

// Elements of one block's logits [g, c, V, topk*V] (plus its gathered K/V) kept below this bound.
std::atomic<int64_t> g_block_elements{kCpuDefaultBlockElements};

at::ScalarType compute_type(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

struct Dims {
  int64_t b, h, sp, d, n, v, topk;
  int64_t bh() const { return b * h; }
};

Dims dims_of(const at::Tensor& q, const at::Tensor& q2k, int64_t tile_volume) {
  return {q.size(0), q.size(1), q.size(2), q.size(3), q.size(2) / tile_volume, tile_volume, q2k.size(3)};
}

// A block of work: (batch*head) rows [r0, r0 + g) x query tiles [n0, n0 + c).
struct Block {
  int64_t r0, g, n0, c;
};

// Blocks covering [BH] x [N] whose size stays under the bound (at least one tile of one head).
std::vector<Block> blocks_of(const Dims& d) {
  const int64_t per_tile = d.v * d.topk * d.v + d.topk * d.v * d.d * 2;  // one head, one query tile
  const int64_t tiles = std::max<int64_t>(1, g_block_elements.load() / std::max<int64_t>(1, per_tile));
  const int64_t c = std::min(d.n, tiles);
  const int64_t g = c < d.n ? 1 : std::max<int64_t>(1, std::min(d.bh(), tiles / d.n));
  std::vector<Block> out;
  for (int64_t r0 = 0; r0 < d.bh(); r0 += g)
    for (int64_t n0 = 0; n0 < d.n; n0 += c) out.push_back({r0, std::min(g, d.bh() - r0), n0, std::min(c, d.n - n0)});
  return out;
}

// KV tiles gathered for a block, and the pad-key mask.
struct Gathered {
  at::Tensor flat_index;  // int64 [g*c*topk]: row in the [BH*N, V, D] view
  at::Tensor k, v;        // [g, c, topk*V, D]
  at::Tensor valid;       // bool [g, c, 1, topk*V]
};

Gathered gather(const Dims& d, const at::Tensor& k_rows, const at::Tensor& v_rows, const at::Tensor& q2k,
                const at::Tensor& key_valid, const Block& blk) {
  Gathered out;
  // [g, c, topk] tile ids -> rows of the [BH*N, V, D] view
  const at::Tensor ids = q2k.narrow(0, blk.r0, blk.g).narrow(1, blk.n0, blk.c).to(at::kLong);
  const at::Tensor row0 = at::arange(blk.r0, blk.r0 + blk.g, ids.options()).view({blk.g, 1, 1}) * d.n;
  out.flat_index = (ids + row0).reshape({-1});
  out.k = k_rows.index_select(0, out.flat_index).view({blk.g, blk.c, d.topk * d.v, d.d});
  out.v = v_rows.index_select(0, out.flat_index).view({blk.g, blk.c, d.topk * d.v, d.d});
  out.valid = key_valid.index_select(0, ids.reshape({-1})).view({blk.g, blk.c, 1, d.topk * d.v});
  return out;
}

// Masked, scaled logits [g, c, V, topk*V].
at::Tensor logits(const at::Tensor& q_block, const Gathered& g, double scale) {
  return at::matmul(q_block, g.k.transpose(-1, -2)).mul_(scale).masked_fill_(
      g.valid.logical_not(), -std::numeric_limits<double>::infinity());
}

at::Tensor key_valid_mask(const at::Tensor& tile_sizes, int64_t n, int64_t v) {
  TORCH_CHECK(tile_sizes.numel() == n, "tile_sizes must have ", n, " entries, got ", tile_sizes.numel());
  return at::arange(v, at::kLong).unsqueeze(0) < tile_sizes.to(at::kLong).unsqueeze(1);  // [N, V]
}

// [B, H, Sp, D] -> [BH, N, V, D] in the compute dtype.
at::Tensor as_tiles(const at::Tensor& x, const Dims& d, at::ScalarType ct) {
  return x.to(ct).contiguous().view({d.bh(), d.n, d.v, d.d});
}

at::Tensor block_of(const at::Tensor& x, const Block& blk) { return x.narrow(0, blk.r0, blk.g).narrow(1, blk.n0, blk.c); }

}  // namespace

void set_cpu_block_elements(int64_t elements) {
  g_block_elements = elements > 0 ? elements : kCpuDefaultBlockElements;
}

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
  // [B, H, Sp, D] -> [BH, N, V, D]; K and V as [BH*N, V, D] rows; q2k as [BH, N, topk]
  const at::Tensor q = as_tiles(a.q, d, ct);
  const at::Tensor k_rows = as_tiles(a.k, d, ct).view({-1, d.v, d.d});
  const at::Tensor v_rows = as_tiles(a.v, d, ct).view({-1, d.v, d.d});
  const at::Tensor q2k = a.q2k.reshape({d.bh(), d.n, d.topk});
  const at::Tensor key_valid = key_valid_mask(a.tile_sizes, d.n, d.v);
  at::Tensor out = at::empty({d.bh(), d.n, d.v, d.d}, q.options());
  at::Tensor lse = at::empty({d.bh(), d.n, d.v}, q.options());
  for (const Block& blk : blocks_of(d)) {
    const Gathered g = gather(d, k_rows, v_rows, q2k, key_valid, blk);
    const at::Tensor s = logits(block_of(q, blk), g, a.scale);  // [g, c, V, topk*V]
    const at::Tensor m = at::logsumexp(s, -1, /*keepdim=*/true);  // [g, c, V, 1]
    block_of(out, blk).copy_(at::matmul(at::exp(s - m), g.v));
    block_of(lse, blk).copy_(m.squeeze(-1));
  }
  return {out.view({d.b, d.h, d.sp, d.d}).to(a.q.scalar_type()), lse.view({d.b, d.h, d.sp})};
}

SparseBackwardResult CpuPath::sparse_backward(const SparseBackwardArgs& a) {
  const Dims d = dims_of(a.q, a.q2k, a.tile_volume);
  const at::ScalarType ct = compute_type(a.q.scalar_type());
  const at::Tensor q = as_tiles(a.q, d, ct), dout = as_tiles(a.dout, d, ct), out = as_tiles(a.out, d, ct);
  const at::Tensor k_rows = as_tiles(a.k, d, ct).view({-1, d.v, d.d});
  const at::Tensor v_rows = as_tiles(a.v, d, ct).view({-1, d.v, d.d});
  const at::Tensor q2k = a.q2k.reshape({d.bh(), d.n, d.topk});
  const at::Tensor lse = a.lse.to(ct).view({d.bh(), d.n, d.v, 1});
  const at::Tensor key_valid = key_valid_mask(a.tile_sizes, d.n, d.v);
  // Delta = rowsum(dO * O): [BH, N, V, 1]
  const at::Tensor delta = (dout * out).sum(-1, /*keepdim=*/true);
  at::Tensor dq = at::empty_like(q);
  at::Tensor dk_rows = at::zeros_like(k_rows), dv_rows = at::zeros_like(v_rows);
  for (const Block& blk : blocks_of(d)) {
    const Gathered g = gather(d, k_rows, v_rows, q2k, key_valid, blk);
    const at::Tensor qb = block_of(q, blk), dob = block_of(dout, blk);
    const at::Tensor p = at::exp(logits(qb, g, a.scale) - block_of(lse, blk));  // [g, c, V, topk*V]
    const at::Tensor ds = p * (at::matmul(dob, g.v.transpose(-1, -2)) - block_of(delta, blk));
    block_of(dq, blk).copy_(at::matmul(ds, g.k).mul_(a.scale));
    // [g, c, topk*V, D] -> [g*c*topk, V, D] rows, accumulated into their KV tiles (in a fixed order)
    dk_rows.index_add_(0, g.flat_index, at::matmul(ds.transpose(-1, -2), qb).mul_(a.scale).reshape({-1, d.v, d.d}));
    dv_rows.index_add_(0, g.flat_index, at::matmul(p.transpose(-1, -2), dob).reshape({-1, d.v, d.d}));
  }
  const at::ScalarType t = a.q.scalar_type();
  const std::vector<int64_t> shape{d.b, d.h, d.sp, d.d};
  return {dq.view(shape).to(t), dk_rows.view(shape).to(t), dv_rows.view(shape).to(t)};
}

}  // namespace vidgraph::attention
