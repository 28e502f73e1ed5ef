// Block-sparse FlashAttention forward kernel. One CTA per (64-row query block, head, batch);
// 4 warps, 16 query rows each. Loops over the block's key-block list (or every key block when
// the list is absent), keeping Q in registers and K/V tiles in shared memory (1 or 2 stages),
// with the online softmax in fp32 in the exp2 domain (flash_fwd_softmax.h). Writes O (dtype T)
// and the natural-log LSE (fp32). Written once against the tile-MMA layer (../common/tile_mma.h).
// kQShared: Q fragments are re-read from shared memory for every key block instead of living in
// registers, and registers are capped for 4 CTAs per multiprocessor (tuning.fwd_q_in_shared).
#pragma once

#include "flash_fwd_softmax.h"

namespace vidgraph::kernels::flash {

template <int D>
constexpr size_t fwd_smem_bytes(int stages, int max_list) {
  return size_t(tile_elems<D>()) * (1 + 2 * stages) * 2 + size_t(kWarps) * kScratchElems * 2 +
         size_t(max_list) * 4;
}

template <int D, typename T, bool kQShared>
__global__ void __launch_bounds__(kThreads, kQShared ? 4 : 1)
    flash_fwd_kernel(FlashForwardParams p, AttentionTuning tune) {
  constexpr int kLd = pitch<D>();
  constexpr int kDt = D / 16;  // 16-wide column tiles of the head dim
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* q_s = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* k_s = q_s + tile_elems<D>();
  uint16_t* v_s = k_s + tune.fwd_stages * tile_elems<D>();
  uint16_t* scratch = v_s + tune.fwd_stages * tile_elems<D>();
  int32_t* list_s = reinterpret_cast<int32_t*>(scratch + kWarps * kScratchElems);

  const int qb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = qb * kBlock;
  const int n_qblocks = gridDim.x;
  const int64_t row_id = (int64_t(b) * p.heads + h) * n_qblocks + qb;
  const ListView list = resolve_list(p.q2k, row_id, (p.seq_kv + kBlock - 1) / kBlock, list_s,
                                     tune.index_in_shared);
  const bool two_stages = tune.fwd_stages == 2;
  const float scale_log2 = p.scale * kLog2e;

  auto load_kv = [&](int kb, int stage) {
    load_tile<D>(k_s + stage * tile_elems<D>(), p.k, b, h, kb * kBlock, p.seq_kv,
                 tune.kv_evict_first);
    load_tile<D>(v_s + stage * tile_elems<D>(), p.v, b, h, kb * kBlock, p.seq_kv,
                 tune.kv_evict_first);
  };

  load_tile<D>(q_s, p.q, b, h, q0, p.seq_q, false);
  copy_commit();
  __syncthreads();  // the staged list is visible
  if (list.count > 0) load_kv(list.at(0), 0);
  copy_commit();
  copy_wait<1>();
  __syncthreads();

  const uint16_t* q_warp = q_s + warp * 16 * kLd;
  mma::FragA qa[kQShared ? 1 : kDt];
  if constexpr (!kQShared)
    for (int kk = 0; kk < kDt; ++kk) mma::load_a(qa[kk], q_warp + kk * 16, kLd, lane);

  mma::FragC o[kDt];
  for (int dn = 0; dn < kDt; ++dn) mma::zero(o[dn]);
  float m[mma::kRowSlots], l[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
  }

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
    const int kb = list.at(it);
    const int n_valid = valid_keys(kb, p.seq_kv, p.kv_block_valid);
    const uint16_t* ks = k_s + stage * tile_elems<D>();
    const uint16_t* vs = v_s + stage * tile_elems<D>();

    mma::FragC s[4];  // 16 query rows x 64 keys
    for (int n = 0; n < 4; ++n) mma::zero(s[n]);
    for (int kk = 0; kk < kDt; ++kk) {
      if constexpr (kQShared) mma::load_a(qa[0], q_warp + kk * 16, kLd, lane);
      const mma::FragA& q_frag = qa[kQShared ? 0 : kk];
      for (int n = 0; n < 4; ++n) {
        mma::FragB kf;
        mma::load_b_nk(kf, ks + n * 16 * kLd + kk * 16, kLd, lane);
        mma::mma<T>(s[n], q_frag, kf);
      }
    }

    online_softmax_step<kDt>(s, o, m, l, n_valid, scale_log2, lane);

    for (int kk = 0; kk < 4; ++kk) {
      mma::FragA pa;
      mma::c_to_a<T>(pa, s[kk], scratch + warp * kScratchElems, lane);
      for (int dn = 0; dn < kDt; ++dn) {
        mma::FragB vf;
        mma::load_b_kn(vf, vs + kk * 16 * kLd + dn * 16, kLd, lane);
        mma::mma<T>(o[dn], pa, vf);
      }
    }
    __syncthreads();  // the next prefetch overwrites this stage
  }

  store_forward_output<T, kDt>(p, o, m, l, b, h, q0 + warp * 16, lane);
}

}  // namespace vidgraph::kernels::flash
