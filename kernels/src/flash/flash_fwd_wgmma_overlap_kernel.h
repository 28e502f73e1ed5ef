// Block-sparse FlashAttention forward for Hopper (sm_90a), overlapped variants: the serial wgmma
// kernel (flash_fwd_wgmma_kernel.h) with the tensor cores kept busy during the softmax and a
// deeper K/V pipeline. Template parameters:
//   kStages  K/V shared-memory stages (2 or 3): K and V tiles of block i live in stage i % kStages.
//   kWG      consumer warpgroups per CTA (1, or 2 for the dense case only): warpgroup w computes
//            query block blockIdx.x * kWG + w; both share every K/V tile (half the loads per FLOP).
//
// Per warpgroup, iteration it (block it of the list) issues, without waiting in between,
//   S(it) = Q·K(it)ᵀ            (own accumulators s; commit group 1)
//   O    += P(it-1)·V(it-1)     (P in registers pa; commit group 2)
// then wait_group 1 (S ready) → softmax_probs(S) (m, l, P; O untouched) while P·V runs →
// wait_group 0 → O *= alpha(it) → P(it) into pa. O sees the same operations in the same order as
// in the serial kernel (O *= alpha(it) after P(it-1)·V(it-1), before P(it)·V(it)), so the bits
// are the serial kernel's.
//
// Copies (cp.async by every thread, 128B-swizzled): group g_0 = {Q, K(0)}, and g_i = {K(i),
// V(i-1)} for i >= 1. The prologue issues g_0 .. g_{kStages-1}; iteration it (>= 1) issues
// g_{it+kStages-1} right after its barrier. S(it) needs K(it) and P(it-1)·V(it-1) needs V(it-1),
// both in g_it, so iteration it waits until at most kStages - 2 groups are in flight, fences the
// async proxy and takes the one block barrier of the iteration. That barrier also frees the
// stages g_{it+kStages-1} overwrites: K(it-1) was last read by S(it-1) and V(it-2) by
// P(it-2)·V(it-2), both waited for in iteration it-1. kStages = 2 prefetches one block ahead,
// kStages = 3 two blocks ahead. Groups past the list end are empty (the counts stay aligned).
//
// Shared memory (no alignment slack: the dynamic shared-memory base is 1024-byte aligned on
// sm_90 when a kernel has no static shared memory; the kernel traps if it is not, rather than
// feeding misaligned tiles to the swizzled descriptors): kWG Q tiles, kStages K tiles, kStages
// V tiles, the staged list. D 128: kWG 1, kStages 3 = 112 KiB (2 CTAs per SM with a short list).
#pragma once

#include "flash_fwd_wgmma_kernel.h"

namespace vidgraph::kernels::flash {

template <int D, int kStages, int kWG>
constexpr size_t wgmma_overlap_smem_bytes(int max_list) {
  return size_t(wgmma::tile_bytes<D>()) * (kWG + 2 * kStages) + size_t(max_list) * 4;
}

template <int D, typename T, int kStages, int kWG>
__global__ void __launch_bounds__(kThreads * kWG, kWG == 1 ? 2 : 1)
    flash_fwd_wgmma_overlap_kernel(FlashForwardParams p, AttentionTuning tune) {
  static_assert(kStages == 2 || kStages == 3, "2 or 3 K/V stages");
  static_assert(kWG == 1 || kWG == 2, "1 or 2 consumer warpgroups");
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kDt = D / 16;
  constexpr int kN = kThreads * kWG;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_ov[];
  if ((wgmma::smem_addr(smem_ov) & 1023u) != 0) __trap();
  unsigned char* q_s = smem_ov;
  unsigned char* k_s = q_s + kWG * kTile;
  unsigned char* v_s = k_s + kStages * kTile;
  int32_t* list_s = reinterpret_cast<int32_t*>(v_s + kStages * kTile);

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
  const uint32_t q_addr = wgmma::smem_addr(q_s + wg * kTile);
  const uint32_t k_addr = wgmma::smem_addr(k_s);
  const uint32_t v_addr = wgmma::smem_addr(v_s);

  auto load_k = [&](int i) {
    if (i < list.count)
      load_tile_sw128<D, kN>(k_s + (i % kStages) * kTile, p.k, b, h, list.at(i) * kBlock,
                             p.seq_kv, tune.kv_evict_first);
  };
  auto load_v = [&](int i) {
    if (i >= 0 && i < list.count)
      load_tile_sw128<D, kN>(v_s + (i % kStages) * kTile, p.v, b, h, list.at(i) * kBlock,
                             p.seq_kv, tune.kv_evict_first);
  };

  for (int w = 0; w < kWG; ++w)
    load_tile_sw128<D, kN>(q_s + w * kTile, p.q, b, h, (blockIdx.x * kWG + w) * kBlock, p.seq_q,
                           false);
  __syncthreads();  // the staged list is visible
  load_k(0);
  copy_commit();  // g_0
  for (int i = 1; i < kStages; ++i) {
    load_k(i);
    load_v(i - 1);
    copy_commit();  // g_i
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
    copy_wait<kStages - 1>();  // g_0: Q and K(0)
    wgmma::proxy_fence();
    __syncthreads();
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_addr, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(s);
    softmax_probs(s, m, l, alpha, valid_keys(list.at(0), p.seq_kv, p.kv_block_valid),
                  scale_log2, lane);  // O is zero: no rescale
    for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);

    for (int it = 1; it < list.count; ++it) {
      copy_wait<kStages - 2>();  // g_it: K(it), V(it-1)
      wgmma::proxy_fence();
      __syncthreads();
      load_k(it + kStages - 1);
      load_v(it + kStages - 2);
      copy_commit();
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
      rescale_output<kDt>(o, alpha);
      for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);
    }

    copy_wait<0>();  // g_count: V(count-1)
    wgmma::proxy_fence();
    __syncthreads();
    const uint32_t v_tile = v_addr + uint32_t((list.count - 1) % kStages) * kTile;
    wgmma::fence_operands(o);
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_tile, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(o);
  } else {
    copy_wait<0>();  // no copy may outlive the block (the Q tile's)
  }

  store_forward_output<T, kDt>(p, o, m, l, b, h, q0 + warp * 16, lane);
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune;
  __trap();
#endif
}

}  // namespace vidgraph::kernels::flash
