// Block-sparse FlashAttention forward for Hopper (sm_90a): the algorithm of flash_fwd_kernel.h on
// the wgmma tile layer (../common/wgmma.h), with a producer warp loading K/V by TMA. Each CTA has
// two consumer warpgroups, warpgroup w computing query block blockIdx.x * 2 + w, then one producer
// warp whose lane 0 issues every TMA copy group (tensor maps in `maps`, wgmma.h). One CTA per SM:
// Hopper allocates registers per warpgroup, so the producer warp costs a warpgroup's worth and a
// CTA of one consumer warpgroup (160 threads at 168 registers) also ran one per SM.
//   kListed = false (dense): both warpgroups share every K/V tile (half the loads per FLOP) in one
//                            ring of 3 stages.
//   kListed = true: each warpgroup has its own block list and its own ring of 2 stages; the
//                   producer issues their groups in turn.
//
// Per warpgroup, iteration it (block it of the list) issues, without waiting in between,
//   S(it) = Q·K(it)ᵀ            (own accumulators s; commit group 1)
//   O    += P(it-1)·V(it-1)     (P in registers pa; commit group 2)
// then wait_group 1 (S ready) → softmax_probs(S) (m, l, P; O untouched) while P·V runs →
// wait_group 0 → O *= alpha(it) → P(it) into pa. O sees the same operations in the same order as
// the mma.sync kernel's online_softmax_step (O *= alpha(it) after P(it-1)·V(it-1), before
// P(it)·V(it)), so the bits are that kernel's (checked on the H200 by vidgraph-hopper-check).
//
// Copies, per ring (wgmma::Ring): group g_0 = {Q, K(0)} (dense: both Q tiles), and g_i = {K(i),
// V(i-1)} for 1 <= i <= count, g_i completing full[i % kStages]. K and V of block i live in stage
// i % kStages. Consumer threads release stage it % kStages once iteration it's MMAs are done (K(it)
// and V(it-1) read); the producer waits for that before issuing g_{it + kStages}. No block barrier
// in the loop: the warpgroups drift apart freely (one's softmax beside the other's MMAs).
//
// Shared memory (no alignment slack: the dynamic shared-memory base is 1024-byte aligned on sm_90
// when a kernel has no static shared memory; the kernel traps if it is not, rather than feeding
// misaligned tiles to the swizzled descriptors): two Q tiles; per ring kStages K tiles, then
// kStages V tiles; per ring 64 bytes of mbarriers; the staged lists. D 128: 128 KiB dense, 160 KiB
// plus the lists listed.
#pragma once

#include "../common/wgmma.h"
#include "flash_fwd_softmax.h"

namespace vidgraph::kernels::flash {

constexpr int kWgmmaFwdThreads = kThreads * 2 + kWarpSize;

template <bool kListed>
VG_HOST_DEVICE constexpr int wgmma_fwd_stages() {
  return kListed ? 2 : 3;
}
template <int D, bool kListed>
constexpr size_t wgmma_fwd_smem_bytes(int max_list) {
  const int rings = kListed ? 2 : 1;
  return size_t(wgmma::tile_bytes<D>()) * (2 + rings * 2 * wgmma_fwd_stages<kListed>()) +
         64 * rings + size_t(max_list) * 4 * rings;
}

template <int D, typename T, bool kListed>
__global__ void __launch_bounds__(kWgmmaFwdThreads, 1)
    flash_fwd_wgmma_kernel(FlashForwardParams p, AttentionTuning tune,
                           const __grid_constant__ wgmma::TmaMaps maps) {
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = wgmma_fwd_stages<kListed>();
  constexpr int kRings = kListed ? 2 : 1;
  constexpr int kDt = D / 16;
  constexpr int kN = kThreads * 2;  // consumer threads; the producer warp follows them
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_ov[];
  if ((wgmma::smem_addr(smem_ov) & 1023u) != 0) __trap();
  const uint32_t q_addr0 = wgmma::smem_addr(smem_ov);
  auto k_stage = [&](int ring, int i) {
    return q_addr0 + uint32_t(2 + ring * 2 * kStages + i % kStages) * kTile;
  };
  auto v_stage = [&](int ring, int i) { return k_stage(ring, i) + kStages * kTile; };
  const uint32_t bars_offset = uint32_t(2 + kRings * 2 * kStages) * kTile;
  auto ring_of = [&](int ring) {
    const uint32_t at = q_addr0 + bars_offset + 64u * ring;
    return wgmma::Ring<kStages>{at, at + 32};
  };
  int32_t* list_s = reinterpret_cast<int32_t*>(smem_ov + bars_offset + 64 * kRings);

  const int wg = threadIdx.x / kThreads;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = (threadIdx.x % kThreads) / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = (blockIdx.x * 2 + wg) * kBlock;
  const int n_qb = (p.seq_q + kBlock - 1) / kBlock;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;
  ListView lists[kRings];
  for (int r = 0; r < kRings; ++r) {
    lists[r] = ListView{nullptr, n_kb};
    if constexpr (kListed) {  // a query block past the end (odd block count) has an empty list
      const int qb = blockIdx.x * 2 + r;
      lists[r] = qb < n_qb ? resolve_list(p.q2k, (int64_t(b) * p.heads + h) * n_qb + qb, n_kb,
                                          list_s + r * p.q2k.max_len, tune.index_in_shared)
                           : ListView{nullptr, 0};
    }
  }
  const float scale_log2 = p.scale * kLog2e;

  // Issues copy group g_i of ring r (see the header); only the producer thread gets here.
  auto issue = [&](int r, int i) {
    const ListView& list = lists[r];
    const int w0 = kListed ? r : 0, n_q = kListed ? 1 : 2;  // the Q tiles g_0 brings
    const bool k = i < list.count, v = i >= 1 && i - 1 < list.count;
    const uint32_t bar = ring_of(r).full_bar(i);
    wgmma::mbar_arrive_expect_tx(
        bar, (i == 0 ? n_q * kTile : 0u) + (k ? kTile : 0u) + (v ? kTile : 0u));
    for (int w = w0; i == 0 && w < w0 + n_q; ++w)
      wgmma::tma_load_tile<D>(q_addr0 + w * kTile, &maps.q, bar, b, h, (blockIdx.x * 2 + w) * kBlock);
    if (k) wgmma::tma_load_tile<D>(k_stage(r, i), &maps.k, bar, b, h, list.at(i) * kBlock);
    if (v) wgmma::tma_load_tile<D>(v_stage(r, i - 1), &maps.v, bar, b, h, list.at(i - 1) * kBlock);
  };

  if (threadIdx.x == 0)
    for (int r = 0; r < kRings; ++r) ring_of(r).init(1, kN / kRings);
  __syncthreads();  // the staged lists and the mbarriers are visible
  if (wg == 2) {  // the producer warp: lane 0 issues every group (g_0 .. g_count per ring), leaves
    if (lane == 0) {
      const int steps = kListed ? max(lists[0].count, lists[kRings - 1].count) : lists[0].count;
      for (int i = 0; i <= steps; ++i)
        for (int r = 0; r < kRings; ++r) {
          if (i > lists[r].count) continue;
          ring_of(r).await_free(i);
          issue(r, i);
        }
    }
    return;
  }

  const int r = kListed ? wg : 0;
  const wgmma::Ring<kStages> ring = ring_of(r);
  const ListView list = lists[r];
  const uint32_t q_addr = q_addr0 + wg * kTile;
  mma::FragC o[kDt];
  for (int dn = 0; dn < kDt; ++dn) mma::zero(o[dn]);
  float m[mma::kRowSlots], l[mma::kRowSlots], alpha[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
  }
  mma::FragC s[4];  // per warp: 16 query rows x 64 keys
  mma::FragA pa[4];

  if (list.count > 0) {
    ring.await(0);  // g_0: Q and K(0)
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk),
                       wgmma::desc_k_major(k_stage(r, 0), kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(s);
    softmax_probs(s, m, l, alpha, valid_keys(list.at(0), p.seq_kv, p.kv_block_valid),
                  scale_log2, lane);  // O is zero: no rescale
    ring.release(0);
    for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);

    for (int it = 1; it < list.count; ++it) {
      ring.await(it);  // g_it: K(it) and V(it-1)
      const uint32_t k_tile = k_stage(r, it), v_tile = v_stage(r, it - 1);
      wgmma::fence_operands(o);
      wgmma::fence();
      for (int kk = 0; kk < kDt; ++kk)
        wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_tile, kk),
                         kk > 0 ? 1 : 0);
      wgmma::commit();
      for (int kk = 0; kk < 4; ++kk)
        wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_tile, kk));
      wgmma::commit();
      wgmma::wait<1>();
      wgmma::fence_operands(s);
      softmax_probs(s, m, l, alpha, valid_keys(list.at(it), p.seq_kv, p.kv_block_valid),
                    scale_log2, lane);
      wgmma::wait<0>();
      wgmma::fence_operands(o);
      ring.release(it);
      rescale_output<kDt>(o, alpha);
      for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);
    }

    ring.await(list.count);  // g_count: V(count-1)
    const uint32_t v_tile = v_stage(r, list.count - 1);
    wgmma::fence_operands(o);
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_tile, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(o);
  } else {
    ring.await(0);  // no copy may outlive the block (the Q tile's)
  }

  store_forward_output<T, kDt>(p, o, m, l, b, h, q0 + warp * 16, lane);
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune, (void)maps;
  __trap();
#endif
}

}  // namespace vidgraph::kernels::flash
