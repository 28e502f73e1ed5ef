// Block-sparse FlashAttention forward for Hopper (sm_90a): the algorithm of flash_fwd_kernel.h on
// the wgmma tile layer (../common/wgmma.h), with a producer warp loading K/V by TMA. Template
// parameter kWG = consumer warpgroups per CTA:
//   kWG = 1  one 64-row query block per CTA, with or without a block list;
//   kWG = 2  dense only (no list): warpgroup w computes query block blockIdx.x * 2 + w, and both
//            share every K/V tile (half the loads per FLOP).
// Threads: kWG consumer warpgroups (128 threads each), then one producer warp whose lane 0 issues
// every TMA copy group (tensor maps in `maps`, wgmma.h) and leaves.
//
// Per warpgroup, iteration it (block it of the list) issues, without waiting in between,
//   S(it) = Q·K(it)ᵀ            (own accumulators s; commit group 1)
//   O    += P(it-1)·V(it-1)     (P in registers pa; commit group 2)
// then wait_group 1 (S ready) → softmax_probs(S) (m, l, P; O untouched) while P·V runs →
// wait_group 0 → O *= alpha(it) → P(it) into pa. O sees the same operations in the same order as
// the mma.sync kernel's online_softmax_step (O *= alpha(it) after P(it-1)·V(it-1), before
// P(it)·V(it)), so the bits are that kernel's (checked on the H200 by vidgraph-hopper-check).
//
// Copies (a wgmma::Ring): group g_0 = {Q, K(0)}, and g_i = {K(i), V(i-1)} for i >= 1, g_i
// completing mbarrier full[i % kStages] (phase parity (i / kStages) & 1), which the consumers wait
// on before the MMAs reading it. K and V of block i live in stage i % kStages (3 stages: copies run up to two blocks
// ahead). Consumer threads arrive on mbarrier empty[it % kStages] once iteration it's MMAs are done
// (K(it) and V(it-1) read); the producer waits on empty[i % kStages] (parity (i / kStages - 1) & 1)
// before issuing g_i, i >= kStages. No block barrier in the loop: with kWG = 2 the warpgroups drift
// apart freely (one's softmax beside the other's MMAs). Groups past the list end are empty and
// never waited for.
//
// Shared memory (no alignment slack: the dynamic shared-memory base is 1024-byte aligned on sm_90
// when a kernel has no static shared memory; the kernel traps if it is not, rather than feeding
// misaligned tiles to the swizzled descriptors): kWG Q tiles, kStages K tiles, kStages V tiles,
// the full and empty mbarriers (64 bytes), the staged list. D 128: kWG 1 = 112 KiB. The H200 runs
// one kWG = 1 CTA per SM (registers are allocated per warpgroup and the producer warp counts as
// one); two listed warpgroups per CTA, each with its own list and 2-stage ring, measured slower
// (2.96 against 2.78-2.83 ms at the Wan2.2-5B shape, sparsity 0.875).
#pragma once

#include "../common/wgmma.h"
#include "flash_fwd_softmax.h"

namespace vidgraph::kernels::flash {

constexpr int kWgmmaStages = 3;

template <int kWG>
constexpr int wgmma_fwd_threads() {
  return kThreads * kWG + kWarpSize;
}

template <int D, int kWG>
constexpr size_t wgmma_fwd_smem_bytes(int max_list) {
  return size_t(wgmma::tile_bytes<D>()) * (kWG + 2 * kWgmmaStages) + 64 + size_t(max_list) * 4;
}

template <int D, typename T, int kWG>
__global__ void __launch_bounds__(wgmma_fwd_threads<kWG>(), kWG == 1 ? 2 : 1)
    flash_fwd_wgmma_kernel(FlashForwardParams p, AttentionTuning tune,
                           const __grid_constant__ wgmma::TmaMaps maps) {
  static_assert(kWG == 1 || kWG == 2, "1 or 2 consumer warpgroups");
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = kWgmmaStages;
  constexpr int kDt = D / 16;
  constexpr int kN = kThreads * kWG;  // consumer threads; the producer warp follows them
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_ov[];
  if ((wgmma::smem_addr(smem_ov) & 1023u) != 0) __trap();
  unsigned char* q_s = smem_ov;
  unsigned char* k_s = q_s + kWG * kTile;
  unsigned char* v_s = k_s + kStages * kTile;
  const uint32_t bar_addr = wgmma::smem_addr(v_s + kStages * kTile);
  const wgmma::Ring<kStages> ring{bar_addr, bar_addr + 32};  // full, empty: kStages x 8 bytes each
  int32_t* list_s = reinterpret_cast<int32_t*>(v_s + kStages * kTile + 64);

  const int wg = threadIdx.x / kThreads;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = (threadIdx.x % kThreads) / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = (blockIdx.x * kWG + wg) * kBlock;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;
  ListView list{nullptr, n_kb};
  if constexpr (kWG == 1) {
    const int64_t row_id = (int64_t(b) * p.heads + h) * gridDim.x + blockIdx.x;
    list = resolve_list(p.q2k, row_id, n_kb, list_s, tune.index_in_shared);
  }
  const float scale_log2 = p.scale * kLog2e;
  const uint32_t q_addr0 = wgmma::smem_addr(q_s);
  const uint32_t q_addr = q_addr0 + wg * kTile;
  const uint32_t k_addr = wgmma::smem_addr(k_s);
  const uint32_t v_addr = wgmma::smem_addr(v_s);

  // Issues copy group g_i (see the header); only the producer thread gets here.
  auto issue = [&](int i) {
    const bool k = i < list.count, v = i >= 1 && i - 1 < list.count;
    const uint32_t bytes = (i == 0 ? kWG * kTile : 0u) + (k ? kTile : 0u) + (v ? kTile : 0u);
    if (bytes == 0) return;  // past the list end: never waited for
    const uint32_t bar = ring.full_bar(i);
    wgmma::mbar_arrive_expect_tx(bar, bytes);
    if (i == 0)
      for (int w = 0; w < kWG; ++w)
        wgmma::tma_load_tile<D>(q_addr0 + w * kTile, &maps.q, bar, b, h,
                                (blockIdx.x * kWG + w) * kBlock);
    if (k)
      wgmma::tma_load_tile<D>(k_addr + (i % kStages) * kTile, &maps.k, bar, b, h,
                              list.at(i) * kBlock);
    if (v)
      wgmma::tma_load_tile<D>(v_addr + ((i - 1) % kStages) * kTile, &maps.v, bar, b, h,
                              list.at(i - 1) * kBlock);
  };
  if (threadIdx.x == 0) ring.init(1, kN);
  __syncthreads();  // the staged list and the mbarriers are visible
  if (threadIdx.x >= kN) {  // the producer warp: lane 0 issues every group, then leaves
    if (threadIdx.x == kN) {
      for (int i = 0; i <= list.count; ++i) {
        ring.await_free(i);
        issue(i);
      }
    }
    return;
  }

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
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_addr, kk),
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
      const uint32_t k_tile = k_addr + uint32_t(it % kStages) * kTile;
      const uint32_t v_tile = v_addr + uint32_t((it - 1) % kStages) * kTile;
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
    const uint32_t v_tile = v_addr + uint32_t((list.count - 1) % kStages) * kTile;
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
