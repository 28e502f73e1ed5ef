// Block-sparse FlashAttention backward for Hopper (sm_90a): the dQ and dK/dV kernels of
// flash_bwd_kernels.h on the wgmma tile layer (../common/wgmma.h), with the streamed tiles loaded
// by TMA into a 2-stage ring (wgmma::Ring). The delta pre-pass is the portable one. No atomics:
// deterministic, and the same MMAs and elementwise operations in the same order as the mma.sync
// kernels, so the same bits (checked on the H200 by vidgraph-hopper-check).
//
// One warpgroup (one 64-row block) per CTA and no producer warp: warp 0 refills a stage with the
// group after next once the warpgroup has released it. Hopper allocates registers per warpgroup,
// so a producer warp would cost a whole warpgroup's registers: the dK/dV consumer needs ~240 per
// thread at D 128 (dK, dV, Sᵀ and dPᵀ are 192 accumulator registers), which fits 2 CTAs per SM
// only without one (a 288-thread CTA at 224 registers failed to launch on the H200).
//
// dQ kernel, per query block (Q, dO resident; K, V of key block it in stage it % 2):
//   S = Q·Kᵀ, dP = dO·Vᵀ (two commit groups) → P = exp2(S·scale·log2e − lse·log2e) while dP
//   runs → dS = P ∘ (dP − delta) → dQ += dS·K.
// dK/dV kernel, per key block (K, V resident; Q, dO, and the rows' lse and delta of query block it
// in stage it % 2):
//   Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ → Pᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta) → dV += Pᵀ·dO, dK += dSᵀ·Q.
//   The rows' lse (log2 domain, +inf for rows past the end) and delta are per column here; warp
//   0's lanes load them a block ahead, stage them in shared memory and arrive on the stage's full
//   barrier beside the TMA transaction (the barrier counts 32 arrivals).
// Shared memory: tiles first (1024-byte aligned base, see flash_fwd_wgmma_kernel.h), then the
// stats stages (dK/dV), 64 bytes of mbarriers, the staged list.
#pragma once

#include "../common/wgmma.h"
#include "flash_common.h"

namespace vidgraph::kernels::flash {

constexpr int kWgmmaBwdStages = 2;

// Both kernels: two resident tiles, then 2 stages of two streamed tiles.
template <int D>
VG_HOST_DEVICE constexpr size_t wgmma_bwd_tiles_bytes() {
  return size_t(wgmma::tile_bytes<D>()) * (2 + 2 * kWgmmaBwdStages);
}
constexpr size_t kWgmmaDkdvStatBytes = size_t(kWgmmaBwdStages) * 2 * kBlock * 4;
template <int D>
constexpr size_t wgmma_dq_smem_bytes(int max_list) {
  return wgmma_bwd_tiles_bytes<D>() + 64 + size_t(max_list) * 4;
}
template <int D>
constexpr size_t wgmma_dkdv_smem_bytes(int max_list) {
  return wgmma_bwd_tiles_bytes<D>() + kWgmmaDkdvStatBytes + 64 + size_t(max_list) * 4;
}

template <int D, typename T>
__global__ void __launch_bounds__(kThreads, 2)
    flash_bwd_dq_wgmma_kernel(FlashBackwardParams p, AttentionTuning tune,
                              const __grid_constant__ wgmma::TmaMaps maps) {
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = kWgmmaBwdStages;
  constexpr int kDt = D / 16;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_dq[];
  if ((wgmma::smem_addr(smem_dq) & 1023u) != 0) __trap();
  // The Q tile, the dO tile, kStages K tiles, kStages V tiles.
  const uint32_t q_tile = wgmma::smem_addr(smem_dq);
  const uint32_t do_tile = q_tile + kTile;
  const uint32_t k_addr = do_tile + kTile, v_addr = k_addr + kStages * kTile;
  const size_t tiles = wgmma_bwd_tiles_bytes<D>();
  const wgmma::Ring<kStages> ring{q_tile + uint32_t(tiles), q_tile + uint32_t(tiles) + 32};
  int32_t* list_s = reinterpret_cast<int32_t*>(smem_dq + tiles + 64);

  const int qb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t bh = int64_t(b) * p.heads + h;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;
  const ListView list = resolve_list(p.q2k, bh * gridDim.x + qb, n_kb, list_s,
                                     tune.index_in_shared);

  // Thread 0 fills group i: K and V of key block list.at(i) (group 0 also Q and dO).
  auto fill = [&](int i) {
    const uint32_t bar = ring.full_bar(i);
    wgmma::mbar_arrive_expect_tx(bar, (i == 0 ? 2 * kTile : 0u) + 2 * kTile);
    if (i == 0) {
      wgmma::tma_load_tile<D>(q_tile, &maps.q, bar, b, h, qb * kBlock);
      wgmma::tma_load_tile<D>(do_tile, &maps.dout, bar, b, h, qb * kBlock);
    }
    const uint32_t stage = uint32_t(i % kStages) * kTile;
    wgmma::tma_load_tile<D>(k_addr + stage, &maps.k, bar, b, h, list.at(i) * kBlock);
    wgmma::tma_load_tile<D>(v_addr + stage, &maps.v, bar, b, h, list.at(i) * kBlock);
  };
  if (threadIdx.x == 0) ring.init(1, kThreads);
  __syncthreads();  // the staged list and the mbarriers are visible
  if (threadIdx.x == 0)
    for (int i = 0; i < kStages && i < list.count; ++i) fill(i);

  const int q0 = qb * kBlock;
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
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_tile, kk), wgmma::desc_k_major(k_tile, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(dp, wgmma::desc_k_major(do_tile, kk), wgmma::desc_k_major(v_tile, kk),
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
    if (threadIdx.x == 0 && it + kStages < list.count) {  // refill this stage
      ring.await_free(it + kStages);
      fill(it + kStages);
    }
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

template <int D, typename T>
__global__ void __launch_bounds__(kThreads, 2)
    flash_bwd_dkdv_wgmma_kernel(FlashBackwardParams p, AttentionTuning tune,
                                const __grid_constant__ wgmma::TmaMaps maps) {
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kStages = kWgmmaBwdStages;
  constexpr int kDt = D / 16;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(1024) unsigned char smem_dkdv[];
  if ((wgmma::smem_addr(smem_dkdv) & 1023u) != 0) __trap();
  // The K tile, the V tile, kStages Q tiles, kStages dO tiles.
  const uint32_t k_tile = wgmma::smem_addr(smem_dkdv);
  const uint32_t v_tile = k_tile + kTile;
  const uint32_t q_addr = v_tile + kTile, do_addr = q_addr + kStages * kTile;
  const size_t tiles = wgmma_bwd_tiles_bytes<D>();
  float* stat_s = reinterpret_cast<float*>(smem_dkdv + tiles);  // per stage: lse2[64], delta[64]
  const uint32_t bars = k_tile + uint32_t(tiles + kWgmmaDkdvStatBytes);
  const wgmma::Ring<kStages> ring{bars, bars + 32};
  int32_t* list_s = reinterpret_cast<int32_t*>(smem_dkdv + tiles + kWgmmaDkdvStatBytes + 64);

  const int kb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t bh = int64_t(b) * p.heads + h;
  const int n_qb = (p.seq_q + kBlock - 1) / kBlock;
  const ListView list = resolve_list(p.k2q, bh * gridDim.x + kb, n_qb, list_s,
                                     tune.index_in_shared);

  // Warp 0 fills group i: each lane the lse (log2 domain, +inf past the end) and delta of rows
  // lane and lane + 32 of query block list.at(i) (loaded early: `row_stats`), lane 0 the TMA.
  struct RowStats {
    float lse2[2], delta[2];
  };
  auto row_stats = [&](int i) {
    RowStats r{};
    if (i >= list.count) return r;
    for (int j = 0; j < 2; ++j) {
      const int q = list.at(i) * kBlock + lane + j * kWarpSize;
      const float lse = q < p.seq_q ? p.lse[bh * p.seq_q + q] : -INFINITY;
      r.lse2[j] = lse == -INFINITY ? INFINITY : lse * kLog2e;
      r.delta[j] = q < p.seq_q ? p.delta[bh * p.seq_q + q] : 0.f;
    }
    return r;
  };
  auto fill = [&](int i, const RowStats& r) {
    float* st = stat_s + (i % kStages) * 2 * kBlock;
    for (int j = 0; j < 2; ++j) {
      st[lane + j * kWarpSize] = r.lse2[j];
      st[kBlock + lane + j * kWarpSize] = r.delta[j];
    }
    const uint32_t bar = ring.full_bar(i);
    if (lane != 0) {
      wgmma::mbar_arrive(bar);  // releases this lane's stat stores to the warpgroup
      return;
    }
    wgmma::mbar_arrive_expect_tx(bar, (i == 0 ? 2 * kTile : 0u) + 2 * kTile);
    if (i == 0) {
      wgmma::tma_load_tile<D>(k_tile, &maps.k, bar, b, h, kb * kBlock);
      wgmma::tma_load_tile<D>(v_tile, &maps.v, bar, b, h, kb * kBlock);
    }
    const int qb = list.at(i);
    const uint32_t stage = uint32_t(i % kStages) * kTile;
    wgmma::tma_load_tile<D>(q_addr + stage, &maps.q, bar, b, h, qb * kBlock);
    wgmma::tma_load_tile<D>(do_addr + stage, &maps.dout, bar, b, h, qb * kBlock);
  };

  if (threadIdx.x == 0) ring.init(kWarpSize, kThreads);
  __syncthreads();  // the staged list and the mbarriers are visible
  if (warp == 0)
    for (int i = 0; i < kStages && i < list.count; ++i) fill(i, row_stats(i));

  const float scale_log2 = p.scale * kLog2e;
  const int n_valid = valid_keys(kb, p.seq_kv, p.kv_block_valid);
  const int my_key0 = warp * 16;
  mma::FragC dk[kDt], dv[kDt], s[4], dp[4];
  for (int dn = 0; dn < kDt; ++dn) {
    mma::zero(dk[dn]);
    mma::zero(dv[dn]);
  }
  mma::FragA pa[4], dsa[4];

  for (int it = 0; it < list.count; ++it) {
    const RowStats next = warp == 0 ? row_stats(it + kStages) : RowStats{};
    ring.await(it);
    const uint32_t q_tile = q_addr + uint32_t(it % kStages) * kTile;
    const uint32_t do_tile = do_addr + uint32_t(it % kStages) * kTile;
    const float* st = stat_s + (it % kStages) * 2 * kBlock;
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(k_tile, kk), wgmma::desc_k_major(q_tile, kk),
                       kk > 0 ? 1 : 0);
    wgmma::commit();
    for (int kk = 0; kk < kDt; ++kk)
      wgmma::mma_qk<T>(dp, wgmma::desc_k_major(v_tile, kk), wgmma::desc_k_major(do_tile, kk),
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
      wgmma::mma_pv<T, kDt>(dv, pa[kk], wgmma::desc_mn_major(do_tile, kk));
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(dk, dsa[kk], wgmma::desc_mn_major(q_tile, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(dv);
    wgmma::fence_operands(dk);
    ring.release(it);
    if (warp == 0 && it + kStages < list.count) {  // refill this stage with group it + kStages
      ring.await_free(it + kStages);
      fill(it + kStages, next);
    }
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
