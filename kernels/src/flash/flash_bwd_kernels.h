// Block-sparse FlashAttention backward: three kernels, no atomics, deterministic.
//  1. flash_bwd_delta_kernel: delta[b,h,s] = Σ_d dO·O (fp32).
//  2. flash_bwd_dq_kernel: one CTA per query block; walks its key-block list (q2k); Q and dO in
//     registers, K/V tiles streamed through shared memory; dQ = scale · Σ dS·K.
//  3. flash_bwd_dkdv_kernel: one CTA per key block; walks its query-block list (k2q); K/V tiles
//     resident in shared memory, Q/dO tiles streamed; dV = Σ Pᵀ·dO, dK = scale · Σ dSᵀ·Q.
// P is recomputed from the forward's LSE: P = exp2(scale·log2e·qᵀk − lse·log2e).
#pragma once

#include "flash_common.h"

namespace vidgraph::kernels::flash {

// Groups of D/8 threads reduce one row; 256 threads per CTA.
template <int D, typename T>
__global__ void __launch_bounds__(256) flash_bwd_delta_kernel(FlashBackwardParams p) {
  constexpr int kGroup = D / 8;
  const int64_t rows = int64_t(p.batch) * p.seq_q * p.heads;
  const int64_t r = (int64_t(blockIdx.x) * 256 + threadIdx.x) / kGroup;
  const int part = threadIdx.x % kGroup;
  float acc = 0.f;
  int b = 0, s = 0, h = 0;
  if (r < rows) {
    h = int(r % p.heads);
    s = int((r / p.heads) % p.seq_q);
    b = int(r / (int64_t(p.heads) * p.seq_q));
    const uint4 ov = *reinterpret_cast<const uint4*>(row_ptr(p.o, b, s, h) + part * 8);
    const uint4 dv = *reinterpret_cast<const uint4*>(row_ptr(p.dout, b, s, h) + part * 8);
    const uint16_t* oe = reinterpret_cast<const uint16_t*>(&ov);
    const uint16_t* de = reinterpret_cast<const uint16_t*>(&dv);
    for (int j = 0; j < 8; ++j) acc += Numeric<T>::to_float(oe[j]) * Numeric<T>::to_float(de[j]);
  }
  for (int m = 1; m < kGroup; m <<= 1) acc += VG_SHFL_XOR(acc, m);
  if (r < rows && part == 0) p.delta[(int64_t(b) * p.heads + h) * p.seq_q + s] = acc;
}

template <int D>
constexpr size_t bwd_dq_smem_bytes(int stages, int max_list) {
  return size_t(tile_elems<D>()) * (2 + 2 * stages) * 2 + size_t(kWarps) * kScratchElems * 2 +
         size_t(max_list) * 4;
}

// kQShared: Q and dO fragments are re-read from shared memory per key block instead of living in
// registers, and registers are capped for 3 CTAs per multiprocessor (tuning.bwd_q_in_shared).
template <int D, typename T, bool kQShared>
__global__ void __launch_bounds__(kThreads, kQShared ? 3 : 1)
    flash_bwd_dq_kernel(FlashBackwardParams p, AttentionTuning tune) {
  constexpr int kLd = pitch<D>();
  constexpr int kDt = D / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* q_s = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* do_s = q_s + tile_elems<D>();
  uint16_t* k_s = do_s + tile_elems<D>();
  uint16_t* v_s = k_s + tune.bwd_stages * tile_elems<D>();
  uint16_t* scratch = v_s + tune.bwd_stages * tile_elems<D>();
  int32_t* list_s = reinterpret_cast<int32_t*>(scratch + kWarps * kScratchElems);

  const int qb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = qb * kBlock;
  const int64_t bh = int64_t(b) * p.heads + h;
  const ListView list = resolve_list(p.q2k, bh * gridDim.x + qb,
                                     (p.seq_kv + kBlock - 1) / kBlock, list_s,
                                     tune.index_in_shared);
  const bool two_stages = tune.bwd_stages == 2;
  const float scale_log2 = p.scale * kLog2e;
  auto load_kv = [&](int kb, int stage) {
    load_tile<D>(k_s + stage * tile_elems<D>(), p.k, b, h, kb * kBlock, p.seq_kv,
                 tune.kv_evict_first);
    load_tile<D>(v_s + stage * tile_elems<D>(), p.v, b, h, kb * kBlock, p.seq_kv,
                 tune.kv_evict_first);
  };

  load_tile<D>(q_s, p.q, b, h, q0, p.seq_q, false);
  load_tile<D>(do_s, p.dout, b, h, q0, p.seq_q, false);
  copy_commit();
  __syncthreads();
  if (list.count > 0) load_kv(list.at(0), 0);
  copy_commit();
  copy_wait<1>();
  __syncthreads();

  const uint16_t* q_warp = q_s + warp * 16 * kLd;
  const uint16_t* do_warp = do_s + warp * 16 * kLd;
  mma::FragA qa[kQShared ? 1 : kDt], doa[kQShared ? 1 : kDt];
  if constexpr (!kQShared) {
    for (int kk = 0; kk < kDt; ++kk) {
      mma::load_a(qa[kk], q_warp + kk * 16, kLd, lane);
      mma::load_a(doa[kk], do_warp + kk * 16, kLd, lane);
    }
  }
  float lse2[mma::kRowSlots], delta[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    const BackwardRowStats st = backward_row_stats(p, bh, q0 + warp * 16 + mma::slot_row(lane, r));
    lse2[r] = st.lse2;
    delta[r] = st.delta;
  }
  mma::FragC dq[kDt];
  for (int dn = 0; dn < kDt; ++dn) mma::zero(dq[dn]);

  for (int it = 0; it < list.count; ++it) {
    const int stage = two_stages ? (it & 1) : 0;
    if (two_stages && it + 1 < list.count) {
      load_kv(list.at(it + 1), (it + 1) & 1);  // prefetch into the other stage
      copy_commit();
      copy_wait<1>();
    } else {
      if (!two_stages && it > 0) {  // one stage: this block's tile was not prefetched
        load_kv(list.at(it), 0);
        copy_commit();
      }
      copy_wait<0>();
    }
    __syncthreads();
    const int n_valid = valid_keys(list.at(it), p.seq_kv, p.kv_block_valid);
    const uint16_t* ks = k_s + stage * tile_elems<D>();
    const uint16_t* vs = v_s + stage * tile_elems<D>();

    mma::FragC s[4], dp[4];
    for (int n = 0; n < 4; ++n) {
      mma::zero(s[n]);
      mma::zero(dp[n]);
    }
    for (int kk = 0; kk < kDt; ++kk) {
      if constexpr (kQShared) {
        mma::load_a(qa[0], q_warp + kk * 16, kLd, lane);
        mma::load_a(doa[0], do_warp + kk * 16, kLd, lane);
      }
      const int j = kQShared ? 0 : kk;
      for (int n = 0; n < 4; ++n) {
        mma::FragB f;
        mma::load_b_nk(f, ks + n * 16 * kLd + kk * 16, kLd, lane);
        mma::mma<T>(s[n], qa[j], f);
        mma::load_b_nk(f, vs + n * 16 * kLd + kk * 16, kLd, lane);
        mma::mma<T>(dp[n], doa[j], f);
      }
    }
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < mma::kCElems; ++i) {
        const int col = n * 16 + mma::c_col(lane, i);
        const int r = mma::c_slot(i);
        const float pv = col < n_valid ? fast_exp2(s[n].c[i] * scale_log2 - lse2[r]) : 0.f;
        s[n].c[i] = pv * (dp[n].c[i] - delta[r]);
      }
    }
    for (int kk = 0; kk < 4; ++kk) {
      mma::FragA dsa;
      mma::c_to_a<T>(dsa, s[kk], scratch + warp * kScratchElems, lane);
      for (int dn = 0; dn < kDt; ++dn) {
        mma::FragB kf;
        mma::load_b_kn(kf, ks + kk * 16 * kLd + dn * 16, kLd, lane);
        mma::mma<T>(dq[dn], dsa, kf);
      }
    }
    __syncthreads();
  }

  for (int dn = 0; dn < kDt; ++dn) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int row = q0 + warp * 16 + mma::c_row(lane, i);
      if (row < p.seq_q) {
        row_ptr_mut(p.dq, b, row, h)[dn * 16 + mma::c_col(lane, i)] =
            Numeric<T>::from_float(dq[dn].c[i] * p.scale);
      }
    }
  }
}

template <int D>
constexpr size_t bwd_dkdv_smem_bytes(int stages, int max_list) {
  return size_t(tile_elems<D>()) * (2 + 2 * stages) * 2 + size_t(stages) * kBlock * 2 * 4 +
         size_t(kWarps) * kScratchElems * 2 + size_t(max_list) * 4;
}

template <int D, typename T>
__global__ void __launch_bounds__(kThreads) flash_bwd_dkdv_kernel(FlashBackwardParams p,
                                                                  AttentionTuning tune) {
  constexpr int kLd = pitch<D>();
  constexpr int kDt = D / 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* k_s = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* v_s = k_s + tile_elems<D>();
  uint16_t* q_s = v_s + tile_elems<D>();
  uint16_t* do_s = q_s + tune.bwd_stages * tile_elems<D>();
  float* stat_s = reinterpret_cast<float*>(do_s + tune.bwd_stages * tile_elems<D>());
  uint16_t* scratch = reinterpret_cast<uint16_t*>(stat_s + tune.bwd_stages * kBlock * 2);
  int32_t* list_s = reinterpret_cast<int32_t*>(scratch + kWarps * kScratchElems);

  const int kb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int k0 = kb * kBlock;
  const int64_t bh = int64_t(b) * p.heads + h;
  const ListView list = resolve_list(p.k2q, bh * gridDim.x + kb,
                                     (p.seq_q + kBlock - 1) / kBlock, list_s,
                                     tune.index_in_shared);
  const bool two_stages = tune.bwd_stages == 2;
  const float scale_log2 = p.scale * kLog2e;
  const int n_valid = valid_keys(kb, p.seq_kv, p.kv_block_valid);
  const int my_key0 = warp * 16;

  // Q/dO tile and the rows' lse (log2 domain; +inf = no contribution) and delta.
  auto load_q = [&](int qb, int stage) {
    load_tile<D>(q_s + stage * tile_elems<D>(), p.q, b, h, qb * kBlock, p.seq_q,
                 tune.kv_evict_first);
    load_tile<D>(do_s + stage * tile_elems<D>(), p.dout, b, h, qb * kBlock, p.seq_q,
                 tune.kv_evict_first);
    float* st = stat_s + stage * kBlock * 2;
    for (int i = threadIdx.x; i < kBlock; i += kThreads) {
      const BackwardRowStats row = backward_row_stats(p, bh, qb * kBlock + i);
      st[i] = row.lse2;
      st[kBlock + i] = row.delta;
    }
  };

  load_tile<D>(k_s, p.k, b, h, k0, p.seq_kv, false);
  load_tile<D>(v_s, p.v, b, h, k0, p.seq_kv, false);
  copy_commit();
  __syncthreads();
  if (list.count > 0) load_q(list.at(0), 0);
  copy_commit();

  mma::FragC dk[kDt], dv[kDt];
  for (int dn = 0; dn < kDt; ++dn) {
    mma::zero(dk[dn]);
    mma::zero(dv[dn]);
  }

  for (int it = 0; it < list.count; ++it) {
    const int stage = two_stages ? (it & 1) : 0;
    if (two_stages && it + 1 < list.count) {
      load_q(list.at(it + 1), (it + 1) & 1);  // prefetch into the other stage
      copy_commit();
      copy_wait<1>();
    } else {
      if (!two_stages && it > 0) {  // one stage: this block's tile was not prefetched
        load_q(list.at(it), 0);
        copy_commit();
      }
      copy_wait<0>();
    }
    __syncthreads();
    const uint16_t* qs = q_s + stage * tile_elems<D>();
    const uint16_t* dos = do_s + stage * tile_elems<D>();
    const float* st = stat_s + stage * kBlock * 2;

    mma::FragC s[4], dp[4];  // 16 keys x 64 queries: Sᵀ and dPᵀ
    for (int n = 0; n < 4; ++n) {
      mma::zero(s[n]);
      mma::zero(dp[n]);
    }
    for (int kk = 0; kk < kDt; ++kk) {
      mma::FragA ka, va;
      mma::load_a(ka, k_s + my_key0 * kLd + kk * 16, kLd, lane);
      mma::load_a(va, v_s + my_key0 * kLd + kk * 16, kLd, lane);
      for (int n = 0; n < 4; ++n) {
        mma::FragB f;
        mma::load_b_nk(f, qs + n * 16 * kLd + kk * 16, kLd, lane);
        mma::mma<T>(s[n], ka, f);
        mma::load_b_nk(f, dos + n * 16 * kLd + kk * 16, kLd, lane);
        mma::mma<T>(dp[n], va, f);
      }
    }
    for (int n = 0; n < 4; ++n) {
      for (int i = 0; i < mma::kCElems; ++i) {
        const int key = my_key0 + mma::c_row(lane, i);
        const int col = n * 16 + mma::c_col(lane, i);
        const float pv = key < n_valid ? fast_exp2(s[n].c[i] * scale_log2 - st[col]) : 0.f;
        s[n].c[i] = pv;
        dp[n].c[i] = pv * (dp[n].c[i] - st[kBlock + col]);
      }
    }
    for (int kk = 0; kk < 4; ++kk) {
      mma::FragA pa, dsa;
      mma::c_to_a<T>(pa, s[kk], scratch + warp * kScratchElems, lane);
      for (int dn = 0; dn < kDt; ++dn) {
        mma::FragB f;
        mma::load_b_kn(f, dos + kk * 16 * kLd + dn * 16, kLd, lane);
        mma::mma<T>(dv[dn], pa, f);
      }
      mma::c_to_a<T>(dsa, dp[kk], scratch + warp * kScratchElems, lane);
      for (int dn = 0; dn < kDt; ++dn) {
        mma::FragB f;
        mma::load_b_kn(f, qs + kk * 16 * kLd + dn * 16, kLd, lane);
        mma::mma<T>(dk[dn], dsa, f);
      }
    }
    __syncthreads();
  }

  for (int dn = 0; dn < kDt; ++dn) {
    for (int i = 0; i < mma::kCElems; ++i) {
      const int key = k0 + my_key0 + mma::c_row(lane, i);
      if (key < p.seq_kv) {
        const int col = dn * 16 + mma::c_col(lane, i);
        row_ptr_mut(p.dk, b, key, h)[col] = Numeric<T>::from_float(dk[dn].c[i] * p.scale);
        row_ptr_mut(p.dv, b, key, h)[col] = Numeric<T>::from_float(dv[dn].c[i]);
      }
    }
  }
}

}  // namespace vidgraph::kernels::flash
