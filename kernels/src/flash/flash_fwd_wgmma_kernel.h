// Block-sparse FlashAttention forward for Hopper (sm_90a): the algorithm of flash_fwd_kernel.h
// on the wgmma tile layer (../common/wgmma.h). This is the serial variant (WgmmaVariant::Serial:
// each MMA batch is waited for before the softmax); flash_fwd_wgmma_overlap_kernel.h holds the
// overlapped, deeper-pipelined variants. One CTA = one warpgroup (128 threads) per
// (64-row query block, head, batch), the same grid and contract as the mma.sync kernel:
//   S = Q·Kᵀ   as D/16 m64n64k16 steps, Q and K read from shared memory through descriptors;
//   online softmax in fp32 registers (flash_fwd_softmax.h, shared with the mma.sync kernel);
//   O += P·V   as 4 m64nDk16 steps, P from registers, V from shared memory read transposed.
// K/V tiles are double-buffered (kWgmmaStages = 2, whatever tuning.fwd_stages says): the next
// listed block's cp.async copies (128B-swizzled, see wgmma.h) run while this block's MMAs do.
// Shared memory: 1 KiB alignment slack, Q tile, 2 K tiles, 2 V tiles, the staged list.
#pragma once

#include "../common/wgmma.h"
#include "flash_fwd_softmax.h"

namespace vidgraph::kernels::flash {

constexpr int kWgmmaStages = 2;
static_assert(kThreads == 128, "the wgmma forward runs one warpgroup (4 warps) per CTA");

template <int D>
constexpr size_t wgmma_fwd_smem_bytes(int max_list) {
  return 1024 + size_t(wgmma::tile_bytes<D>()) * (1 + 2 * kWgmmaStages) + size_t(max_list) * 4;
}

// Copies rows [row0, row0 + 64) of one (b, h) slice into a Sw128 tile (1024-byte aligned);
// rows >= seq become zeros. Asynchronous on NVIDIA: copy_commit / copy_wait, then proxy_fence.
// All kNThreads threads of the CTA take part.
template <int D, int kNThreads = kThreads>
VG_DEVICE void load_tile_sw128(unsigned char* tile, const TensorView& t, int b, int h, int row0,
                               int seq, bool evict_first) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < kBlock * kChunks; c += kNThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const bool valid = row0 + r < seq;
    const uint16_t* src = row_ptr(t, b, valid ? row0 + r : 0, h) + col;
    copy16(tile + wgmma::sw128_offset(r, col), src, valid, evict_first);
  }
}

template <int D, typename T>
__global__ void __launch_bounds__(kThreads, 2)
    flash_fwd_wgmma_kernel(FlashForwardParams p, AttentionTuning tune,
                           const __grid_constant__ wgmma::TmaMaps /*unused: no TMA*/) {
#if defined(VG_NVIDIA_WGMMA)
  constexpr int kDt = D / 16;
  constexpr uint32_t kTile = wgmma::tile_bytes<D>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* q_s = smem_raw + ((1024u - (wgmma::smem_addr(smem_raw) & 1023u)) & 1023u);
  unsigned char* k_s = q_s + kTile;
  unsigned char* v_s = k_s + kWgmmaStages * kTile;
  int32_t* list_s = reinterpret_cast<int32_t*>(v_s + kWgmmaStages * kTile);
  const uint32_t q_addr = wgmma::smem_addr(q_s);
  const uint32_t k_addr = wgmma::smem_addr(k_s);
  const uint32_t v_addr = wgmma::smem_addr(v_s);

  const int qb = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int q0 = qb * kBlock;
  const int64_t row_id = (int64_t(b) * p.heads + h) * gridDim.x + qb;
  const ListView list = resolve_list(p.q2k, row_id, (p.seq_kv + kBlock - 1) / kBlock, list_s,
                                     tune.index_in_shared);
  const float scale_log2 = p.scale * kLog2e;

  auto load_kv = [&](int kb, int stage) {
    load_tile_sw128<D>(k_s + stage * kTile, p.k, b, h, kb * kBlock, p.seq_kv,
                       tune.kv_evict_first);
    load_tile_sw128<D>(v_s + stage * kTile, p.v, b, h, kb * kBlock, p.seq_kv,
                       tune.kv_evict_first);
  };

  load_tile_sw128<D>(q_s, p.q, b, h, q0, p.seq_q, false);
  copy_commit();
  __syncthreads();  // the staged list is visible
  if (list.count > 0) load_kv(list.at(0), 0);
  copy_commit();

  mma::FragC o[kDt];
  for (int dn = 0; dn < kDt; ++dn) mma::zero(o[dn]);
  float m[mma::kRowSlots], l[mma::kRowSlots];
  for (int r = 0; r < mma::kRowSlots; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
  }

  for (int it = 0; it < list.count; ++it) {
    const int stage = it & 1;
    if (it + 1 < list.count) {
      load_kv(list.at(it + 1), stage ^ 1);  // the other stage was released at the last barrier
      copy_commit();
      copy_wait<1>();
    } else {
      copy_wait<0>();
    }
    wgmma::proxy_fence();  // this thread's copies → visible to the async proxy
    __syncthreads();
    const int n_valid = valid_keys(list.at(it), p.seq_kv, p.kv_block_valid);

    mma::FragC s[4];  // per warp: 16 query rows x 64 keys; the first step overwrites
    wgmma::fence();
    for (int kk = 0; kk < kDt; ++kk) {
      wgmma::mma_qk<T>(s, wgmma::desc_k_major(q_addr, kk),
                       wgmma::desc_k_major(k_addr + stage * kTile, kk), kk > 0 ? 1 : 0);
    }
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(s);

    online_softmax_step<kDt>(s, o, m, l, n_valid, scale_log2, lane);

    mma::FragA pa[4];
    for (int kk = 0; kk < 4; ++kk) mma::c_to_a<T>(pa[kk], s[kk], nullptr, lane);
    wgmma::fence_operands(o);
    wgmma::fence();
    for (int kk = 0; kk < 4; ++kk)
      wgmma::mma_pv<T, kDt>(o, pa[kk], wgmma::desc_mn_major(v_addr + stage * kTile, kk));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::fence_operands(o);
    __syncthreads();  // every warp is done reading this stage: the next prefetch may overwrite it
  }
  if (list.count == 0) copy_wait<0>();  // no copy may outlive the block (the Q tile's)

  store_forward_output<T, kDt>(p, o, m, l, b, h, q0 + warp * 16, lane);
#elif defined(__CUDA_ARCH__)
  (void)p, (void)tune;
  __trap();
#endif
}

}  // namespace vidgraph::kernels::flash
