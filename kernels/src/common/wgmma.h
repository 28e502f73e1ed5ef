// Hopper tile layer (sm_90a): warpgroup MMAs (`wgmma.mma_async`) reading operands from shared
// memory through matrix descriptors, the 128-byte-swizzled tile layout they read, and the TMA
// loads and mbarriers that fill it. Only the Hopper kernels (flash/flash_fwd_wgmma_kernel.h,
// flash/flash_bwd_wgmma_kernels.h) and their device check include this.
//
// Contract (one warpgroup = 4 consecutive warps = 128 threads, all participate):
//  - Tiles are 64 rows x D (64 or 128) 16-bit elements in the Sw128 layout below, the tile base
//    1024-byte aligned. A Q or K tile is read K-major (rows = M or N, the head dim contiguous);
//    a V tile is read MN-major (rows = keys = the K of P·V, the head dim = N contiguous).
//  - Accumulators use the tile-MMA layer's FragC (16 rows x 16 columns per warp): warp w of the
//    warpgroup owns rows 16w..16w+15, and FragC n holds columns 16n..16n+15, element i of a lane
//    at (c_row(lane, i), c_col(lane, i)) — exactly the wgmma m64nN f32 accumulator fragment
//    (d[8n + i] = FragC n element i), so the online softmax code is the mma.sync code.
//  - The A operand from registers is the tile-MMA layer's FragA (c_to_a of a FragC), which is the
//    wgmma m64k16 A fragment of the warp's 16 rows.
//  - mma_qk: C(64x64) (+)= A(64x16, K-major smem) · B(16x64 from a K-major 64x16 smem slice)ᵀ.
//    mma_pv: C(64xN) += A(64x16, registers) · B(16xN, MN-major smem).
//  - Ordering: fence() before the first MMA of a batch (after registers it reads were written),
//    commit() after the batch, wait<N>() before reading accumulators. Tiles written by TMA are
//    visible once their mbarrier phase completes; shared memory written by ordinary stores (the
//    device check's probes) must be made visible to the MMAs (async proxy) with proxy_fence() by
//    the writing threads, then a block barrier.
// Instructions exist only in the sm_90a device pass (VG_NVIDIA_WGMMA); any other device pass of a
// caller traps, and the host pass sees declarations only.
#pragma once

#include "numeric.h"
#include "tile_mma.h"
#include "vendor.h"

#include <cuda.h>

#include <cstdint>
#include <type_traits>

#if !defined(VG_PLATFORM_CUDA)
#error "wgmma.h is the NVIDIA Hopper tile layer; the HIP build must not include it."
#endif

namespace vidgraph::kernels::wgmma {

// ---- Shared-memory layout ("Sw128") -------------------------------------------------------------
// A 64-row tile of D 16-bit columns is cut into D/64 column panels of 64 columns (128 bytes per
// row). Panel a occupies bytes [8192a, 8192a + 8192): row r at 128r, and within the row the
// 16-byte chunk c (columns 8c..8c+7 of the panel) sits at chunk position c ^ (r % 8). This is the
// PTX ISA's 128B swizzle pattern (Swizzle<3,4,3>: address bits 4-6 XOR bits 7-9) applied to a
// dense panel, given the panel base is 1024-byte aligned (so bits 7-9 of the address are r % 8).
// Each group of 8 rows (1024 bytes) is one swizzle atom: 8 rows x 128 bytes.
constexpr int kTileRows = 64;
constexpr uint32_t kRowBytes = 128;                       // one row of a panel
constexpr uint32_t kAtomBytes = 8 * kRowBytes;            // 8 rows: one swizzle atom
constexpr uint32_t kPanelBytes = kTileRows * kRowBytes;   // 64 rows x 64 columns

template <int D>
VG_HOST_DEVICE constexpr uint32_t tile_bytes() {
  return uint32_t(kTileRows) * D * 2;
}

// Byte offset of the 16-byte chunk holding columns [col, col + 8) of row `row` (col % 8 == 0).
VG_HOST_DEVICE constexpr uint32_t sw128_offset(int row, int col) {
  return uint32_t(col / 64) * kPanelBytes + uint32_t(row) * kRowBytes +
         uint32_t(((col % 64) / 8) ^ (row % 8)) * 16;
}

// ---- Matrix descriptors ---------------------------------------------------------------------------
// 64-bit wgmma shared-memory descriptor (PTX ISA, "Matrix Descriptor Format"):
//   bits  0-13  start address >> 4 (shared-window address, 18 bits used)
//   bits 16-29  leading dimension byte offset (LBO) >> 4
//   bits 32-45  stride dimension byte offset (SBO) >> 4
//   bits 49-51  base offset: 0, because every pattern start we use is 1024-byte aligned in bits
//               7-9 (start addresses only move by 32-byte steps inside a row, or whole atoms)
//   bits 62-63  swizzle mode: 1 = 128B swizzle
// K-major (Q and K tiles; canonical layout Swizzle<3,4,3> o ((8,m),(T,2k)):((8T,SBO),(1,T)),
// T = 8 elements): rows step by 128 bytes inside an atom (implied by the swizzle mode), and the
// next 8-row group (next core-matrix row in M/N) is SBO = 1024 bytes further: our atoms are
// stacked densely. LBO is not used for swizzled K-major layouts (encoded as 1). One k16 step is
// 32 bytes of a row: step k starts at panel k / 4, byte (k % 4) * 32 of row 0 — the hardware
// applies the XOR to the final address, so a 32-byte start shift inside a 1024-aligned atom
// selects columns 16(k%4).. of every row.
// MN-major (V tiles, read transposed with imm-trans-b = 1; canonical layout
// Swizzle<3,4,3> o ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))): the 64 contiguous N elements of a row
// are one panel row; the next 64 N elements (next panel, D = 128) are LBO = 8192 bytes further;
// the next 8 rows in K (keys) are SBO = 1024 bytes further. One k16 step = 16 key rows = 2048
// bytes, so step k starts at byte 2048k (atom aligned).
VG_DEVICE uint64_t make_desc_sw128(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((smem_addr & 0x3FFFFu) >> 4) | (uint64_t(lbo >> 4) << 16) |
         (uint64_t(sbo >> 4) << 32) | (uint64_t(1) << 62);
}
// k16 step k of a K-major tile at shared address `tile`.
VG_DEVICE uint64_t desc_k_major(uint32_t tile, int k) {
  return make_desc_sw128(tile + uint32_t(k / 4) * kPanelBytes + uint32_t(k % 4) * 32, 16,
                         kAtomBytes);
}
// k16 step k (rows 16k..16k+15) of an MN-major tile at shared address `tile`.
VG_DEVICE uint64_t desc_mn_major(uint32_t tile, int k) {
  return make_desc_sw128(tile + uint32_t(k) * 2 * kAtomBytes, kPanelBytes, kAtomBytes);
}

VG_DEVICE uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- Ordering -----------------------------------------------------------------------------------
VG_DEVICE void fence() {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
VG_DEVICE void commit() {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
VG_DEVICE void wait() {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Generic-proxy shared-memory writes (st.shared) → visible to wgmma (async proxy).
VG_DEVICE void proxy_fence() {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Keeps the compiler from moving accumulator reads/writes across fence/commit/wait.
template <int N>
VG_DEVICE void fence_operands(mma::FragC (&c)[N]) {
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < mma::kCElems; ++i) asm volatile("" : "+f"(c[n].c[i])::"memory");
}

// ---- MMAs ---------------------------------------------------------------------------------------
#define VG_WG_ACC(c, n)                                                                  \
  "+f"(c[n].c[0]), "+f"(c[n].c[1]), "+f"(c[n].c[2]), "+f"(c[n].c[3]), "+f"(c[n].c[4]),   \
      "+f"(c[n].c[5]), "+f"(c[n].c[6]), "+f"(c[n].c[7])
#define VG_WG_D32                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define VG_WG_D64                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63}"

// S tile step: c (+)= A·Bᵀ for one k16 slice, both operands K-major in shared memory.
// accumulate == 0 overwrites c (scale-d = 0).
#define VG_WG_QK(TY)                                                                        \
  asm volatile(                                                                             \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                          \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " VG_WG_D32                \
      ", %32, %33, p, 1, 1, 0, 0;\n}\n"                                                     \
      : VG_WG_ACC(c, 0), VG_WG_ACC(c, 1), VG_WG_ACC(c, 2), VG_WG_ACC(c, 3)                 \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate))
template <typename T>
VG_DEVICE void mma_qk(mma::FragC (&c)[4], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#if defined(VG_NVIDIA_WGMMA)
  if constexpr (std::is_same<T, Bf16>::value) {
    VG_WG_QK("bf16");
  } else {
    VG_WG_QK("f16");
  }
#elif defined(__CUDA_ARCH__)
  (void)c, (void)desc_a, (void)desc_b, (void)accumulate;
  __trap();
#endif
}

// O step: c += A·B for one k16 slice, A from registers, B MN-major in shared memory (transposed).
#define VG_WG_PV64(TY)                                                                      \
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " VG_WG_D32       \
               ", {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"                                 \
               : VG_WG_ACC(c, 0), VG_WG_ACC(c, 1), VG_WG_ACC(c, 2), VG_WG_ACC(c, 3)        \
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(desc_b))
#define VG_WG_PV128(TY)                                                                     \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " VG_WG_D64      \
               ", {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"                                 \
               : VG_WG_ACC(c, 0), VG_WG_ACC(c, 1), VG_WG_ACC(c, 2), VG_WG_ACC(c, 3),       \
                 VG_WG_ACC(c, 4), VG_WG_ACC(c, 5), VG_WG_ACC(c, 6), VG_WG_ACC(c, 7)        \
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "l"(desc_b))
template <typename T, int kDt>
VG_DEVICE void mma_pv(mma::FragC (&c)[kDt], const mma::FragA& a, uint64_t desc_b) {
  static_assert(kDt == 4 || kDt == 8, "mma_pv: N is 64 or 128");
#if defined(VG_NVIDIA_WGMMA)
  constexpr bool kBf16 = std::is_same<T, Bf16>::value;
  if constexpr (kDt == 4) {
    if constexpr (kBf16) {
      VG_WG_PV64("bf16");
    } else {
      VG_WG_PV64("f16");
    }
  } else {
    if constexpr (kBf16) {
      VG_WG_PV128("bf16");
    } else {
      VG_WG_PV128("f16");
    }
  }
#elif defined(__CUDA_ARCH__)
  (void)c, (void)a, (void)desc_b;
  __trap();
#endif
}

// ---- TMA and mbarriers ------------------------------------------------------------------------
// One elected thread loads a 64-row tile with cp.async.bulk.tensor from a 4-D tensor map of a
// [B, S, H, D] view (dims innermost first: D, H, S, B; box 64 x 1 x 64 x 1, 128B swizzle), one
// call per 64-column panel: the box lands as 64 rows x 128 bytes with the chunk XOR of the Sw128
// layout above (the swizzle is a function of the shared address bits, the panel 1024-aligned).
// Rows past S are zero-filled and still counted in the transaction bytes. Completion is tracked
// by an mbarrier (arrival count 1: the issuing thread's arrive.expect_tx) that every consumer
// waits on with the phase parity; TMA writes are async-proxy writes, visible to wgmma after the
// wait without a proxy fence.
struct TmaMaps {
  CUtensorMap q, k, v, dout;  // dout: the backward's only
};

VG_DEVICE void mbar_init(uint32_t bar, uint32_t count) {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
VG_DEVICE void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}
// Plain arrival (the consumers' release of a stage).
VG_DEVICE void mbar_arrive(uint32_t bar) {
#if defined(VG_NVIDIA_WGMMA)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Waits for the phase with the given parity to complete; traps after 2^20 failed polls (each
// poll may suspend for a hardware time limit: tens of milliseconds to seconds in all, far beyond
// any real wait here, which is at most one block's MMAs) so that a lost transaction shows up as
// an error instead of a hang.
VG_DEVICE void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(VG_NVIDIA_WGMMA)
  for (uint32_t tries = 0;; ++tries) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (tries > (1u << 20)) __trap();
  }
#endif
}
// Rows [row0, row0 + 64) of head h, batch b into a Sw128 tile at shared address `tile`.
template <int D>
VG_DEVICE void tma_load_tile(uint32_t tile, const CUtensorMap* map, uint32_t bar, int b, int h,
                             int row0) {
#if defined(VG_NVIDIA_WGMMA)
  for (int a = 0; a < D / 64; ++a) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(tile + uint32_t(a) * kPanelBytes),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(a * 64), "r"(h), "r"(row0), "r"(b)
        : "memory");
  }
#endif
}

// A ring of kStages shared-memory stages between a producer and its consumers: group i (the tiles
// of loop step i) lands in stage i % kStages. `full` and `empty` are kStages mbarriers each (8
// bytes apart). The producer waits until the stage is free (await_free), fills it and completes
// full[stage] (TMA transaction bytes, plus arrivals); consumers wait for the group (await), read it,
// and each arrives on empty[stage] (release).
template <int kStages>
struct Ring {
  uint32_t full, empty;
  VG_DEVICE void init(uint32_t producer_arrivals, uint32_t consumers) const {
    for (int i = 0; i < kStages; ++i) {
      mbar_init(full + 8u * i, producer_arrivals);
      mbar_init(empty + 8u * i, consumers);
    }
  }
  VG_DEVICE uint32_t full_bar(int i) const { return full + 8u * uint32_t(i % kStages); }
  VG_DEVICE void await(int i) const { mbar_wait(full_bar(i), uint32_t(i / kStages) & 1u); }
  VG_DEVICE void release(int i) const { mbar_arrive(empty + 8u * uint32_t(i % kStages)); }
  VG_DEVICE void await_free(int i) const {
    if (i >= kStages) mbar_wait(empty + 8u * uint32_t(i % kStages), uint32_t(i / kStages - 1) & 1u);
  }
};

#undef VG_WG_QK
#undef VG_WG_PV64
#undef VG_WG_PV128
#undef VG_WG_D32
#undef VG_WG_D64
#undef VG_WG_ACC

}  // namespace vidgraph::kernels::wgmma
