// Shared pieces of the block-sparse FlashAttention kernels: block geometry, the shared-memory
// tile layout, a 64-row tile loader for [B, S, H, D] views, list access and fast exp2.
// Tiles in shared memory are 64 rows x D 16-bit elements with a row pitch of D + 8 elements
// (16 bytes of padding keep ldmatrix / LDS reads free of bank conflicts).
#pragma once

#include "../common/memory.h"
#include "../common/numeric.h"
#include "../common/tile_mma.h"
#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

#include <cstdint>

namespace vidgraph::kernels::flash {

constexpr int kBlock = 64;                      // rows per query block and per key block
constexpr int kWarps = 4;                       // each warp owns 16 rows of the block
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kScratchElems = mma::kCToANeedsScratch ? 256 : 0;  // per warp, for c_to_a
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <int D>
VG_HOST_DEVICE constexpr int pitch() {
  return D + 8;
}
template <int D>
VG_HOST_DEVICE constexpr int tile_elems() {
  return kBlock * pitch<D>();
}

VG_DEVICE float fast_exp2(float x) {
#if defined(VG_NVIDIA_MMA)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

VG_DEVICE const uint16_t* row_ptr(const TensorView& t, int b, int64_t s, int h) {
  return static_cast<const uint16_t*>(t.data) + b * t.stride_b + s * t.stride_s + h * t.stride_h;
}
VG_DEVICE uint16_t* row_ptr_mut(const TensorView& t, int b, int64_t s, int h) {
  return static_cast<uint16_t*>(t.data) + b * t.stride_b + s * t.stride_s + h * t.stride_h;
}

// Copies rows [row0, row0 + 64) of one (b, h) slice into a shared tile; rows >= seq become zeros.
template <int D>
VG_DEVICE void load_tile(uint16_t* tile, const TensorView& t, int b, int h, int row0, int seq,
                         bool evict_first) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < kBlock * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = row0 + r < seq;
    const uint16_t* src = row_ptr(t, b, valid ? row0 + r : 0, h) + col;
    copy16(tile + r * pitch<D>() + col, src, valid, evict_first);
  }
}

// Number of valid keys in key block kb (sequence end and VSA pad slots).
VG_DEVICE int valid_keys(int kb, int seq_kv, const int32_t* kv_block_valid) {
  int n = seq_kv - kb * kBlock;
  n = n < kBlock ? n : kBlock;
  if (kv_block_valid != nullptr) {
    const int v = kv_block_valid[kb];
    n = v < n ? v : n;
  }
  return n;
}

// The backward's per-query-row statistics: the forward's LSE in the exp2 domain (+inf for a row
// past the end or with no key, so that P = exp2(s - lse2) = 0) and delta = rowsum(dO∘O).
struct BackwardRowStats {
  float lse2, delta;
};
VG_DEVICE BackwardRowStats backward_row_stats(const FlashBackwardParams& p, int64_t bh, int row) {
  if (row >= p.seq_q) return {INFINITY, 0.f};
  const float lse = p.lse[bh * p.seq_q + row];
  return {lse == -INFINITY ? INFINITY : lse * kLog2e, p.delta[bh * p.seq_q + row]};
}

// The block list of one (b, h, row block): either a list or "every block".
struct ListView {
  const int32_t* index;  // nullptr → dense
  int count;
  VG_DEVICE int at(int i) const { return index != nullptr ? index[i] : i; }
};

// Resolves a row block's list; when staged, copies it to `stage` (a block barrier follows in the
// caller before first use).
VG_DEVICE ListView resolve_list(const BlockLists& lists, int64_t row, int dense_count,
                                int32_t* stage, bool staged) {
  if (lists.index == nullptr) return ListView{nullptr, dense_count};
  const int n = lists.count != nullptr ? lists.count[row] : lists.max_len;
  const int32_t* src = lists.index + row * lists.max_len;
  if (!staged) return ListView{src, n};
  for (int i = threadIdx.x; i < n; i += kThreads) stage[i] = src[i];
  return ListView{stage, n};
}

}  // namespace vidgraph::kernels::flash
