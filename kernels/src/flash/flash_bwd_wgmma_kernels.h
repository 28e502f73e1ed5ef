// Block-sparse FlashAttention backward for Hopper (sm_90a): the dQ and dK/dV kernels of
// flash_bwd_kernels.h on the wgmma tile layer (../common/wgmma.h), fed by a producer warp with TMA
// through a 2-stage ring (wgmma::Ring). The delta pre-pass is the portable one. No atomics:
// deterministic, and the same MMAs and elementwise operations in the same order as the mma.sync
// kernels, so the same bits (checked on the H200 by vidgraph-hopper-check).
// Each CTA has consumer warpgroups (one 64-row block each) and then one producer warp. dQ: two
// warpgroups sharing the K/V stream without lists, one with (2 CTAs per SM). dK/dV: always two,
// sharing the Q/dO stream without lists, each with its own list and ring otherwise. Registers are
// capped per kernel (__maxnreg__) at what those CTAs per SM can hold: __launch_bounds__ would count
// the producer warp as a whole warpgroup and leave the dK/dV consumer (D 128: dK, dV, Sᵀ and dPᵀ
// are 192 accumulator registers) too few; with one dK/dV warpgroup per CTA, 2 CTAs per SM
// (200 registers) made ptxas serialise the wgmmas.
// dQ kernel, per query block (Q, dO resident; K, V of block it in stage it % 2):
//   S = Q·Kᵀ, dP = dO·Vᵀ (two commit groups) → P = exp2(S·scale·log2e − lse·log2e) while dP
//   runs → dS = P ∘ (dP − delta) → dQ += dS·K, left in flight while the next block's S and dP
//   are issued; its stage is released once it completes.
// dK/dV kernel, per key block (K, V resident; Q, dO, and the rows' lse and delta of query block it
// in stage it % 2):
//   Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ → Pᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta) → dV += Pᵀ·dO, dK += dSᵀ·Q.
//   The rows' lse (log2 domain, +inf for rows past the end) and delta are per column here; the
//   producer warp's lanes stage them in shared memory and arrive on the stage's full barrier
//   beside the TMA transaction (the barrier counts 32 arrivals).
// Shared memory: tiles first (1024-byte aligned base, see flash_fwd_wgmma_kernel.h), then the
// stats stages (dK/dV), 64 bytes of mbarriers, the staged list.
#pragma once

#include "../common/wgmma.h"
#include "flash_common.h"

namespace vidgraph::kernels::flash {

constexpr int kWgmmaBwdStages = 2;

template <int kWG>
constexpr int wgmma_bwd_threads() {
  return kThreads * kWG + kWarpSize;
}
// Per thread: 2 CTAs of 160 threads or 1 of 288 in 65536 registers, rounded down to 8.
template <int kWG>
constexpr int wgmma_bwd_registers() {
  return kWG == 1 ? 200 : 224;
}

// dQ: kWG Q and dO tiles, then 2 stages of K and V tiles; 64 bytes of mbarriers; the list.
template <int D, int kWG>
VG_HOST_DEVICE constexpr size_t wgmma_dq_tiles_bytes() {
  return size_t(wgmma::tile_bytes<D>()) * (2 * kWG + 2 * kWgmmaBwdStages);
}
template <int D, int kWG>
constexpr size_t wgmma_dq_smem_bytes(int max_list) {
  return wgmma_dq_tiles_bytes<D, kWG>() + 64 + size_t(max_list) * 4;
}
// dK/dV: two K and V tiles, then per ring 2 stages of Q and dO tiles; per ring and stage the
// rows' lse and delta; 64 bytes of mbarriers per ring; the two lists.
template <int D, bool kListed>
VG_HOST_DEVICE constexpr size_t wgmma_dkdv_tiles_bytes() {
  return size_t(wgmma::tile_bytes<D>()) * (4 + (kListed ? 2 : 1) * 2 * kWgmmaBwdStages);
}
template <bool kListed>
VG_HOST_DEVICE constexpr size_t wgmma_dkdv_stat_bytes() {
  return size_t(kListed ? 2 : 1) * kWgmmaBwdStages * 2 * kBlock * 4;
}
template <int D, bool kListed>
constexpr size_t wgmma_dkdv_smem_bytes(int max_list) {
  return wgmma_dkdv_tiles_bytes<D, kListed>() + wgmma_dkdv_stat_bytes<kListed>() +
         64 * (kListed ? 2 : 1) + size_t(max_list) * 4 * (kListed ? 2 : 1);
}

template <int D, typename T, int kWG>
__global__ void __maxnreg__(wgmma_bwd_registers<kWG>())
    flash_bwd_dq_wgmma_kernel(FlashBackwardParams p, AttentionTuning tune,
                              const __grid_constant__ wgmma::TmaMaps maps) {
  static_assert(kWG == 1 || kWG == 2, "1 or 2 consumer warpgroups");
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = kWgmmaBwdStages;
  constexpr int kDt = D / 16;
  constexpr int kN = kThreads * kWG;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_dq[];
  if ((wgmma::smem_addr(smem_dq) & 1023u) != 0) __trap();
  const uint32_t q_addr0 = wgmma::smem_addr(smem_dq);  // kWG Q tiles, then kWG dO tiles
  const uint32_t do_addr0 = q_addr0 + kWG * kTile;
  const uint32_t k_addr = do_addr0 + kWG * kTile;       // kStages K tiles, then kStages V tiles
  const uint32_t v_addr = k_addr + kStages * kTile;
  const size_t bars = wgmma_dq_tiles_bytes<D, kWG>();
  const wgmma::Ring<kStages> ring{q_addr0 + uint32_t(bars), q_addr0 + uint32_t(bars) + 32};
  int32_t* list_s = reinterpret_cast<int32_t*>(smem_dq + bars + 64);

  const int wg = threadIdx.x / kThreads;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = (threadIdx.x % kThreads) / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int qb0 = blockIdx.x * kWG;
  const int64_t bh = int64_t(b) * p.heads + h;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;
  ListView list{nullptr, n_kb};
  if constexpr (kWG == 1)
    list = resolve_list(p.q2k, bh * gridDim.x + blockIdx.x, n_kb, list_s, tune.index_in_shared);

  if (threadIdx.x == 0) ring.init(1, kN);
  __syncthreads();  // the staged list and the mbarriers are visible
  if (wg == kWG) {  // the producer warp: lane 0 issues every group, then leaves
    if (threadIdx.x == kN) {
      for (int i = 0; i < list.count; ++i) {
        ring.await_free(i);
        const uint32_t bar = ring.full_bar(i);
        wgmma::mbar_arrive_expect_tx(bar, (i == 0 ? 2 * kWG * kTile : 0u) + 2 * kTile);
        if (i == 0) {
          for (int w = 0; w < kWG; ++w) {
            wgmma::tma_load_tile<D>(q_addr0 + w * kTile, &maps.q, bar, b, h, (qb0 + w) * kBlock);
            wgmma::tma_load_tile<D>(do_addr0 + w * kTile, &maps.dout, bar, b, h,
                                    (qb0 + w) * kBlock);
          }
        }
        const uint32_t stage = uint32_t(i % kStages) * kTile;
        wgmma::tma_load_tile<D>(k_addr + stage, &maps.k, bar, b, h, list.at(i) * kBlock);
        wgmma::tma_load_tile<D>(v_addr + stage, &maps.v, bar, b, h, list.at(i) * kBlock);
      }
    }
    return;
  }

  const int q0 = (qb0 + wg) * kBlock;
  const uint32_t q_addr = q_addr0 + wg * kTile, do_addr = do_addr0 + wg * kTile;
  const float scale_log2 = p.scale * kLog2e;
  float lse2[mma::kRowSlots], delta[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    const int row = q0 + warp * 16 + mma::slot_row(lane, r);
    const float lse = row < p.seq_q ? p.lse[bh * p.seq_q + row] : -INFINITY;
    lse2[r] = lse == -INFINITY ? INFINITY : lse * kLog2e;  // empty row: P = 0
    delta[r] = row < p.seq_q ? p.delta[bh * p.seq_q + row] : 0.f;
  }
  mma::FragC dq[kDt], s[4], dp[4];
  for (int dn = 0; dn < kDt; ++dn) mma::zero(dq[dn]);
  mma::FragA dsa[4];

  for (int it = 0; it < list.count; ++it) {
    ring.await(it);
    const uint32_t k_tile = k_addr + uint32_t(it % kStages) * kTile;
    const uint32_t v_tile = v_addr + uint32_t(it % kStages) * kTile;
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk), wgmma::desc_k_major(k_tile, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(dp, wgmma::desc_k_major(do_addr, kk), wgmma::desc_k_major(v_tile, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    const int n_valid = valid_keys(list.at(it), p.seq_kv, p.kv_block_valid);
    wgmma::wait<1>();
    wgmma::fence_operands(s);
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < mma::kCElems; ++i) {
        const int col = n * 16 + mma::c_col(lane, i);
        s[n].c[i] = col < n_valid ? fast_exp2(s[n].c[i] * scale_log2 - lse2[mma::c_slot(i)]) : 0.f;
      }
    wgmma::wait<0>();
    wgmma::fence_operands(dp);
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < mma::kCElems; ++i)
        s[n].c[i] = s[n].c[i] * (dp[n].c[i] - delta[mma::c_slot(i)]);
      mma::c_to_a<T>(dsa[n], s[n], nullptr, lane);
    }
    wgmma::fence_operands(dq);
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(dq, dsa[kk], wgmma::desc_mn_major(k_tile, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dq);
    ring.release(it);
  }

  for (int dn = 0; dn < kDt; ++dn) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int row = q0 + warp * 16 + mma::c_row(lane, i);
      if (row < p.seq_q)
        row_ptr_mut(p.dq, b, row, h)[dn * 16 + mma::c_col(lane, i)] =
            Numeric<T>::from_float(dq[dn].c[i] * p.scale);
    }
  }
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune, (void)maps;
  __trap();
#endif
}

// kListed = false: the two warpgroups take key blocks 2x and 2x + 1 and share one ring (every query
// block). kListed = true: each takes its own key block with its own list and its own ring (the
// producer serves both, one group of each in turn).
template <int D, typename T, bool kListed>
__global__ void __maxnreg__(wgmma_bwd_registers<2>())
    flash_bwd_dkdv_wgmma_kernel(FlashBackwardParams p, AttentionTuning tune,
                                const __grid_constant__ wgmma::TmaMaps maps) {
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = kWgmmaBwdStages;
  constexpr int kRings = kListed ? 2 : 1;
  constexpr int kDt = D / 16;
  constexpr int kN = kThreads * 2;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_dkdv[];
  if ((wgmma::smem_addr(smem_dkdv) & 1023u) != 0) __trap();
  // K tiles, V tiles (one per warpgroup); per ring: kStages Q tiles, kStages dO tiles.
  const uint32_t k_addr0 = wgmma::smem_addr(smem_dkdv);
  const uint32_t v_addr0 = k_addr0 + 2 * kTile;
  const uint32_t q_addr0 = v_addr0 + 2 * kTile;
  auto q_tile = [&](int ring, int i) {
    return q_addr0 + uint32_t(ring * 2 * kStages + i % kStages) * kTile;
  };
  auto do_tile = [&](int ring, int i) { return q_tile(ring, i) + kStages * kTile; };
  const size_t tiles = wgmma_dkdv_tiles_bytes<D, kListed>();
  // Per ring and stage: lse2[64], delta[64].
  float* stat_s = reinterpret_cast<float*>(smem_dkdv + tiles);
  auto stats = [&](int ring, int i) { return stat_s + (ring * kStages + i % kStages) * 2 * kBlock; };
  const size_t bars = tiles + wgmma_dkdv_stat_bytes<kListed>();
  auto ring_of = [&](int r) {
    const uint32_t at = k_addr0 + uint32_t(bars) + 64u * r;
    return wgmma::Ring<kStages>{at, at + 32};
  };
  int32_t* list_s = reinterpret_cast<int32_t*>(smem_dkdv + bars + 64 * kRings);

  const int wg = threadIdx.x / kThreads;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = (threadIdx.x % kThreads) / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int kb0 = blockIdx.x * 2;
  const int64_t bh = int64_t(b) * p.heads + h;
  const int n_qb = (p.seq_q + kBlock - 1) / kBlock;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;
  ListView lists[kRings];
  for (int r = 0; r < kRings; ++r) {
    lists[r] = ListView{nullptr, n_qb};
    if constexpr (kListed) {  // a key block past the end (odd block count) has an empty list
      lists[r] = kb0 + r < n_kb ? resolve_list(p.k2q, bh * n_kb + kb0 + r, n_qb,
                                               list_s + r * p.k2q.max_len, tune.index_in_shared)
                                : ListView{nullptr, 0};
    }
  }

  if (threadIdx.x == 0)
    for (int r = 0; r < kRings; ++r) ring_of(r).init(kWarpSize, kN / kRings);
  __syncthreads();  // the staged lists and the mbarriers are visible
  if (wg == 2) {  // the producer warp: every lane stages stats, lane 0 issues the TMA
    const int steps = kListed ? max(lists[0].count, lists[kRings - 1].count) : lists[0].count;
    for (int i = 0; i < steps; ++i) {
      for (int r = 0; r < kRings; ++r) {
        if (i >= lists[r].count) continue;
        const wgmma::Ring<kStages> ring = ring_of(r);
        ring.await_free(i);
        const int qb = lists[r].at(i);
        float* st = stats(r, i);
        for (int row = lane; row < kBlock; row += kWarpSize) {
          const int q = qb * kBlock + row;
          const float lse = q < p.seq_q ? p.lse[bh * p.seq_q + q] : -INFINITY;
          st[row] = lse == -INFINITY ? INFINITY : lse * kLog2e;
          st[kBlock + row] = q < p.seq_q ? p.delta[bh * p.seq_q + q] : 0.f;
        }
        const uint32_t bar = ring.full_bar(i);
        if (lane == 0) {
          // Group 0 of a ring also brings the K and V tiles of the warpgroups it feeds.
          const int w0 = kListed ? r : 0, n_w = kListed ? 1 : 2;
          wgmma::mbar_arrive_expect_tx(bar, (i == 0 ? 2 * n_w * kTile : 0u) + 2 * kTile);
          for (int w = w0; i == 0 && w < w0 + n_w; ++w) {
            wgmma::tma_load_tile<D>(k_addr0 + w * kTile, &maps.k, bar, b, h, (kb0 + w) * kBlock);
            wgmma::tma_load_tile<D>(v_addr0 + w * kTile, &maps.v, bar, b, h, (kb0 + w) * kBlock);
          }
          wgmma::tma_load_tile<D>(q_tile(r, i), &maps.q, bar, b, h, qb * kBlock);
          wgmma::tma_load_tile<D>(do_tile(r, i), &maps.dout, bar, b, h, qb * kBlock);
        } else {
          wgmma::mbar_arrive(bar);  // releases this lane's stat stores to the consumers
        }
      }
    }
    return;
  }

  const int r = kListed ? wg : 0;
  const wgmma::Ring<kStages> ring = ring_of(r);
  const ListView list = lists[r];
  const int kb = kb0 + wg;
  const uint32_t k_tile = k_addr0 + wg * kTile, v_tile = v_addr0 + wg * kTile;
  const float scale_log2 = p.scale * kLog2e;
  // A key block past the end (the second warpgroup of the last CTA) has no valid key.
  const int n_valid = kb < n_kb ? valid_keys(kb, p.seq_kv, p.kv_block_valid) : 0;
  const int my_key0 = warp * 16;
  mma::FragC dk[kDt], dv[kDt], s[4], dp[4];
  for (int dn = 0; dn < kDt; ++dn) {
    mma::zero(dk[dn]);
    mma::zero(dv[dn]);
  }
  mma::FragA pa[4], dsa[4];

  for (int it = 0; it < list.count; ++it) {
    ring.await(it);
    const uint32_t qt = q_tile(r, it), dot = do_tile(r, it);
    const float* st = stats(r, it);
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(k_tile, kk), wgmma::desc_k_major(qt, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(dp, wgmma::desc_k_major(v_tile, kk), wgmma::desc_k_major(dot, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    wgmma::wait<1>();
    wgmma::fence_operands(s);
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < mma::kCElems; ++i) {
        const int key = my_key0 + mma::c_row(lane, i);
        const int col = n * 16 + mma::c_col(lane, i);
        s[n].c[i] = key < n_valid ? fast_exp2(s[n].c[i] * scale_log2 - st[col]) : 0.f;
      }
    wgmma::wait<0>();
    wgmma::fence_operands(dp);
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < mma::kCElems; ++i) {
        const int col = n * 16 + mma::c_col(lane, i);
        dp[n].c[i] = s[n].c[i] * (dp[n].c[i] - st[kBlock + col]);
      }
      mma::c_to_a<T>(pa[n], s[n], nullptr, lane);
      mma::c_to_a<T>(dsa[n], dp[n], nullptr, lane);
    }
    wgmma::fence_operands(dv);
    wgmma::fence_operands(dk);
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(dv, pa[kk], wgmma::desc_mn_major(dot, kk));
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(dk, dsa[kk], wgmma::desc_mn_major(qt, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dv);
    wgmma::fence_operands(dk);
    ring.release(it);
  }

  for (int dn = 0; dn < kDt; ++dn) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int key = kb * kBlock + my_key0 + mma::c_row(lane, i);
      if (key < p.seq_kv) {
        const int col = dn * 16 + mma::c_col(lane, i);
        row_ptr_mut(p.dk, b, key, h)[col] = Numeric<T>::from_float(dk[dn].c[i] * p.scale);
        row_ptr_mut(p.dv, b, key, h)[col] = Numeric<T>::from_float(dv[dn].c[i]);
      }
    }
  }
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune, (void)maps;
  __trap();
#endif
}

}  // namespace vidgraph::kernels::flash
