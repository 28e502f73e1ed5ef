// Block-sparse FlashAttention forward for Hopper (sm_90a), overlapped variants: the serial wgmma
// kernel (flash_fwd_wgmma_kernel.h) with the tensor cores kept busy during the softmax and a
// deeper K/V pipeline. Template parameters:
//   kStages  K/V shared-memory stages (2 or 3): K and V tiles of block i live in stage i % kStages.
//   kWG      consumer warpgroups per CTA (1, or 2 for the dense case only): warpgroup w computes
//            query block blockIdx.x * kWG + w; both share every K/V tile (half the loads per FLOP).
//   kLoad    kLoadCpAsync: every thread copies with cp.async (groups, copy_wait, proxy fence,
//            barrier).
//            kLoadTma: thread 0 issues TMA tile loads (tensor maps in `maps`, wgmma.h) and group
//            g_i completes mbarrier full[i % kStages] (parity (i / kStages) & 1), which every
//            thread waits on. The block barrier of each iteration stays: it is what frees the
//            stages the next group overwrites.
//            kLoadTmaProducer: one more warp (threads kWG*128 .. +31, after the consumer
//            warpgroups) whose lane 0 issues every group; the consumers never take a block
//            barrier in the loop. Consumer threads arrive on mbarrier empty[it % kStages] once
//            iteration it's MMAs are done (K(it) and V(it-1) read), and the producer waits on
//            empty[i % kStages] (parity (i / kStages - 1) & 1) before issuing g_i, i >= kStages.
//            With kWG = 2 the two warpgroups drift apart freely (one's softmax beside the
//            other's MMAs).
//            kLoadTmaPingpong (kWG = 2 only): as kLoadTmaProducer, and the warpgroups take turns
//            to issue MMAs (named barriers 1 and 2): warpgroup w waits on barrier 1 + w before
//            each issue point (S(0); S(it) with P(it-1)·V(it-1); the last P·V) and afterwards
//            arrives on the other's barrier, so one's MMAs run while the other does its softmax.
//            Warpgroup 1 arrives once ahead (warpgroup 0 goes first) and skips its arrival after
//            its last issue point: count + 1 syncs meet count + 1 arrivals on each barrier.
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
// V tiles, the full and empty mbarriers (64 bytes), the staged list. D 128: kWG 1, kStages 3 = 112 KiB (2
// CTAs per SM with a short list).
#pragma once

#include "flash_fwd_wgmma_kernel.h"

namespace vidgraph::kernels::flash {

constexpr int kLoadCpAsync = 0, kLoadTma = 1, kLoadTmaProducer = 2, kLoadTmaPingpong = 3;

template <int kWG, int kLoad>
constexpr int wgmma_overlap_threads() {
  return kThreads * kWG + (kLoad >= kLoadTmaProducer ? kWarpSize : 0);
}

template <int D, int kStages, int kWG>
constexpr size_t wgmma_overlap_smem_bytes(int max_list) {
  return size_t(wgmma::tile_bytes<D>()) * (kWG + 2 * kStages) + 64 + size_t(max_list) * 4;
}

template <int D, typename T, int kStages, int kWG, int kLoad>
__global__ void __launch_bounds__(wgmma_overlap_threads<kWG, kLoad>(), kWG == 1 ? 2 : 1)
    flash_fwd_wgmma_overlap_kernel(FlashForwardParams p, AttentionTuning tune,
                                   const __grid_constant__ wgmma::TmaMaps maps) {
  static_assert(kStages == 2 || kStages == 3, "2 or 3 K/V stages");
  static_assert(kWG == 1 || kWG == 2, "1 or 2 consumer warpgroups");
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kDt = D / 16;
  constexpr bool kTma = kLoad != kLoadCpAsync, kWs = kLoad >= kLoadTmaProducer;
  constexpr bool kPp = kLoad == kLoadTmaPingpong;
  static_assert(!kPp || kWG == 2, "ping-pong needs two consumer warpgroups");
  constexpr int kN = kThreads * kWG;  // consumer threads (all threads without a producer warp)
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_ov[];
  if ((wgmma::smem_addr(smem_ov) & 1023u) != 0) __trap();
  unsigned char* q_s = smem_ov;
  unsigned char* k_s = q_s + kWG * kTile;
  unsigned char* v_s = k_s + kStages * kTile;
  const uint32_t bar_addr = wgmma::smem_addr(v_s + kStages * kTile);  // full: kStages x 8 bytes
  const uint32_t empty_addr = bar_addr + 32;                            // empty: kStages x 8
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

  // Issues copy group g_i (see the header); with kTma only thread 0 gets here.
  auto issue = [&](int i) {
    const bool k = i < list.count, v = i >= 1 && i - 1 < list.count;
    if constexpr (kTma) {
      const uint32_t bytes = (i == 0 ? kWG * kTile : 0u) + (k ? kTile : 0u) + (v ? kTile : 0u);
      if (bytes == 0) return;  // past the list end: never waited for
      const uint32_t bar = bar_addr + 8u * uint32_t(i % kStages);
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
    } else {
      if (i == 0)
        for (int w = 0; w < kWG; ++w)
          load_tile_sw128<D, kN>(q_s + w * kTile, p.q, b, h, (blockIdx.x * kWG + w) * kBlock,
                                 p.seq_q, false);
      if (k)
        load_tile_sw128<D, kN>(k_s + (i % kStages) * kTile, p.k, b, h, list.at(i) * kBlock,
                               p.seq_kv, tune.kv_evict_first);
      if (v)
        load_tile_sw128<D, kN>(v_s + ((i - 1) % kStages) * kTile, p.v, b, h,
                               list.at(i - 1) * kBlock, p.seq_kv, tune.kv_evict_first);
      copy_commit();
    }
  };
  // Makes group g_i visible to every thread's MMAs. Without TMA: every cp.async group but the
  // newest `after` (the number issued after g_i) is waited for, then fence and block barrier.
  auto await_group = [&](int i, auto after) {
    if constexpr (kTma) {
      wgmma::mbar_wait(bar_addr + 8u * uint32_t(i % kStages), uint32_t(i / kStages) & 1u);
    } else {
      copy_wait<decltype(after)::value>();
      wgmma::proxy_fence();
      __syncthreads();
    }
  };
  using Behind0 = std::integral_constant<int, 0>;

  if constexpr (kTma) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < kStages; ++i) wgmma::mbar_init(bar_addr + 8u * i, 1);
      if constexpr (kWs)
        for (int i = 0; i < kStages; ++i) wgmma::mbar_init(empty_addr + 8u * i, kN);
    }
  }
  __syncthreads();  // the staged list and the mbarriers are visible
  if constexpr (kWs) {
    if (threadIdx.x >= kN) {  // the producer warp: lane 0 issues every group, then leaves
      if (threadIdx.x == kN) {
        for (int i = 0; i <= list.count; ++i) {
          if (i >= kStages)
            wgmma::mbar_wait(empty_addr + 8u * uint32_t(i % kStages),
                             uint32_t(i / kStages - 1) & 1u);
          issue(i);
        }
      }
      return;
    }
  } else if (!kTma || threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) issue(i);
  }
  // Consumers: iteration it's MMAs are done; with a producer warp, release its stages.
  auto release = [&](int it) {
    if constexpr (kWs) wgmma::mbar_arrive(empty_addr + 8u * uint32_t(it % kStages));
  };
  // Ping-pong turns around each issue point (no-ops otherwise).
  auto turn_take = [&]() {
    if constexpr (kPp) wgmma::named_sync(1 + wg, kN);
  };
  auto turn_pass = [&](bool last) {
    if constexpr (kPp)
      if (!(last && wg == 1)) wgmma::named_arrive(2 - wg, kN);
  };

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
    if constexpr (kPp)
      if (wg == 1) wgmma::named_arrive(1, kN);  // warpgroup 0 takes the first turn
    await_group(0, std::integral_constant<int, kStages - 1>{});  // g_0: Q and K(0)
    turn_take();
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_addr, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    turn_pass(false);
    wgmma::wait<0>();
    wgmma::fence_operands(s);
    softmax_probs(s, m, l, alpha, valid_keys(list.at(0), p.seq_kv, p.kv_block_valid),
                  scale_log2, lane);  // O is zero: no rescale
    release(0);
    for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);

    for (int it = 1; it < list.count; ++it) {
      // g_it holds K(it) and V(it-1). The block barrier (inside await_group without TMA) shows every
      // warp past iteration it-1, so the stages g_{it+kStages-1} overwrites are free.
      if constexpr (kWs) {
        await_group(it, Behind0{});
      } else if constexpr (kTma) {
        __syncthreads();
        if (threadIdx.x == 0) issue(it + kStages - 1);
        await_group(it, Behind0{});
      } else {
        await_group(it, std::integral_constant<int, kStages - 2>{});
        issue(it + kStages - 1);
      }
      const uint32_t k_tile = k_addr + uint32_t(it % kStages) * kTile;
      const uint32_t v_tile = v_addr + uint32_t((it - 1) % kStages) * kTile;
      wgmma::fence_operands(o);
      turn_take();
      wgmma::fence();
      for (int kk = 0; kk < kDt; ++kk)
        wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_tile, kk),
                         kk > 0 ? 1 : 0);
      wgmma::commit();
      for (int kk = 0; kk < 4; ++kk)
        wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_tile, kk));
      wgmma::commit();
      turn_pass(false);
      wgmma::wait<1>();
      wgmma::fence_operands(s);
      softmax_probs(s, m, l, alpha, valid_keys(list.at(it), p.seq_kv, p.kv_block_valid),
                    scale_log2, lane);
      wgmma::wait<0>();
      wgmma::fence_operands(o);
      release(it);
      rescale_output<kDt>(o, alpha);
      for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);
    }

    await_group(list.count, Behind0{});  // g_count: V(count-1)
    const uint32_t v_tile = v_addr + uint32_t((list.count - 1) % kStages) * kTile;
    wgmma::fence_operands(o);
    turn_take();
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_tile, kk));
    wgmma::commit();
    turn_pass(true);
    wgmma::wait<0>();
    wgmma::fence_operands(o);
  } else {
    await_group(0, Behind0{});  // no copy may outlive the block (the Q tile's)
  }

  store_forward_output<T, kDt>(p, o, m, l, b, h, q0 + warp * 16, lane);
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune, (void)maps;
  __trap();
#endif
}

}  // namespace vidgraph::kernels::flash
