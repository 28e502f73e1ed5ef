// Tile-MMA layer: the only code that knows matrix-instruction fragment layouts. The attention
// algorithm is written once against this vocabulary; each vendor branch implements it.
//
// Contract (per warp / wavefront, all lanes participate, shapes fixed at 16x16x16):
//  - FragA: A tile, 16 rows (M) x 16 (K) of 16-bit elements, loaded from shared memory stored
//    row-major (K contiguous) with leading dimension `ld` elements (16-byte aligned rows).
//  - FragB: B tile, 16 (K) x 16 (N). load_b_nk reads shared memory stored N-major ([n][k], K
//    contiguous: e.g. K for Q·Kᵀ); load_b_kn reads it stored K-major ([k][n], N contiguous: e.g. V
//    for P·V).
//  - FragC: 16x16 fp32 accumulator. Element i of a lane sits at (c_row(lane,i), c_col(lane,i)).
//    Elements that share a row inside one lane share a "row slot" c_slot(i); a lane owns
//    kRowSlots rows, slot_row(lane, s) names them. row_max/row_sum reduce across the lanes that
//    hold one row, leaving the result in all of them.
//  - mma<T>(C, A, B): C += A·B, fp32 accumulate, T = Bf16 or Fp16.
//  - c_to_a<T>(A, C, scratch): converts an accumulator tile to an A operand (rounding to T). On
//    NVIDIA this is a register repack (the layouts line up); on AMD the layouts are transposed, so
//    it goes through `scratch`, 16x16 16-bit elements of shared memory private to the warp.
// Branches: VG_NVIDIA_MMA (mma.sync.m16n8k16 + ldmatrix, sm_80+), VG_AMD_MFMA
// (v_mfma_f32_16x16x16{bf16_1k,f16}, gfx90a/gfx94x). A device pass for any other target traps.
#pragma once

#include "numeric.h"
#include "vendor.h"

#include <cstdint>
#include <type_traits>

namespace vidgraph::kernels::mma {

#if defined(VG_PLATFORM_CUDA)

struct FragA {
  uint32_t r[4];
};
struct FragB {
  uint32_t r[4];
};
struct FragC {
  float c[8];
};
constexpr int kCElems = 8;
constexpr int kRowSlots = 2;

VG_DEVICE int c_row(int lane, int i) { return (lane >> 2) + 8 * ((i & 3) >> 1); }
VG_DEVICE int c_col(int lane, int i) { return 8 * (i >> 2) + 2 * (lane & 3) + (i & 1); }
VG_DEVICE constexpr int c_slot(int i) { return (i & 3) >> 1; }
VG_DEVICE int slot_row(int lane, int s) { return (lane >> 2) + 8 * s; }

VG_DEVICE float row_max(float v) {
  v = fmaxf(v, VG_SHFL_XOR(v, 1));
  return fmaxf(v, VG_SHFL_XOR(v, 2));
}
VG_DEVICE float row_sum(float v) {
  v += VG_SHFL_XOR(v, 1);
  return v + VG_SHFL_XOR(v, 2);
}

VG_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const uint16_t* p, bool trans) {
#if defined(VG_NVIDIA_MMA)
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  if (trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  }
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

VG_DEVICE void load_a(FragA& a, const uint16_t* tile, int ld, int lane) {
  ldmatrix_x4(a.r, tile + ((lane & 7) + 8 * ((lane >> 3) & 1)) * ld + 8 * (lane >> 4), false);
}
VG_DEVICE void load_b_nk(FragB& b, const uint16_t* tile, int ld, int lane) {
  ldmatrix_x4(b.r, tile + ((lane & 7) + 8 * (lane >> 4)) * ld + 8 * ((lane >> 3) & 1), false);
}
VG_DEVICE void load_b_kn(FragB& b, const uint16_t* tile, int ld, int lane) {
  ldmatrix_x4(b.r, tile + ((lane & 7) + 8 * ((lane >> 3) & 1)) * ld + 8 * (lane >> 4), true);
}

template <typename T>
VG_DEVICE void mma_m16n8k16(float* c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(VG_NVIDIA_MMA)
  if constexpr (std::is_same<T, Bf16>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

template <typename T>
VG_DEVICE void mma(FragC& c, const FragA& a, const FragB& b) {
  mma_m16n8k16<T>(c.c, a.r, b.r[0], b.r[1]);
  mma_m16n8k16<T>(c.c + 4, a.r, b.r[2], b.r[3]);
}

template <typename T>
VG_DEVICE void c_to_a(FragA& a, const FragC& c, uint16_t* /*scratch*/, int /*lane*/) {
  a.r[0] = pack2<T>(c.c[0], c.c[1]);
  a.r[1] = pack2<T>(c.c[2], c.c[3]);
  a.r[2] = pack2<T>(c.c[4], c.c[5]);
  a.r[3] = pack2<T>(c.c[6], c.c[7]);
}

constexpr bool kCToANeedsScratch = false;

#else  // VG_PLATFORM_HIP

typedef short vg_short4 __attribute__((ext_vector_type(4)));
typedef _Float16 vg_half4 __attribute__((ext_vector_type(4)));
typedef float vg_float4 __attribute__((ext_vector_type(4)));

struct FragA {
  vg_short4 v;
};
struct FragB {
  vg_short4 v;
};
struct FragC {
  float c[4];
};
constexpr int kCElems = 4;
constexpr int kRowSlots = 4;

VG_DEVICE int c_row(int lane, int i) { return 4 * (lane >> 4) + i; }
VG_DEVICE int c_col(int lane, int /*i*/) { return lane & 15; }
VG_DEVICE constexpr int c_slot(int i) { return i; }
VG_DEVICE int slot_row(int lane, int s) { return 4 * (lane >> 4) + s; }

VG_DEVICE float row_max(float v) {
  for (int m = 1; m < 16; m <<= 1) v = fmaxf(v, VG_SHFL_XOR(v, m));
  return v;
}
VG_DEVICE float row_sum(float v) {
  for (int m = 1; m < 16; m <<= 1) v += VG_SHFL_XOR(v, m);
  return v;
}

VG_DEVICE vg_short4 load4(const uint16_t* p) { return *reinterpret_cast<const vg_short4*>(p); }

VG_DEVICE void load_a(FragA& a, const uint16_t* tile, int ld, int lane) {
  a.v = load4(tile + (lane & 15) * ld + 4 * (lane >> 4));
}
VG_DEVICE void load_b_nk(FragB& b, const uint16_t* tile, int ld, int lane) {
  b.v = load4(tile + (lane & 15) * ld + 4 * (lane >> 4));
}
VG_DEVICE void load_b_kn(FragB& b, const uint16_t* tile, int ld, int lane) {
  const uint16_t* p = tile + 4 * (lane >> 4) * ld + (lane & 15);
  b.v = vg_short4{short(p[0]), short(p[ld]), short(p[2 * ld]), short(p[3 * ld])};
}

template <typename T>
VG_DEVICE void mma(FragC& c, const FragA& a, const FragB& b) {
#if defined(VG_AMD_MFMA)
  vg_float4 acc = {c.c[0], c.c[1], c.c[2], c.c[3]};
  if constexpr (std::is_same<T, Bf16>::value) {
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a.v, b.v, acc, 0, 0, 0);
  } else {
    vg_half4 ah, bh;
    __builtin_memcpy(&ah, &a.v, 8);
    __builtin_memcpy(&bh, &b.v, 8);
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(ah, bh, acc, 0, 0, 0);
  }
  for (int i = 0; i < 4; ++i) c.c[i] = acc[i];
#elif defined(__HIP_DEVICE_COMPILE__)
  __builtin_trap();
#endif
}

VG_DEVICE void wave_sync_lds() {
#if defined(__HIP_DEVICE_COMPILE__)
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "wavefront");
  __builtin_amdgcn_wave_barrier();
#endif
}

template <typename T>
VG_DEVICE void c_to_a(FragA& a, const FragC& c, uint16_t* scratch, int lane) {
  wave_sync_lds();
  for (int i = 0; i < 4; ++i)
    scratch[c_row(lane, i) * 16 + c_col(lane, i)] = Numeric<T>::from_float(c.c[i]);
  wave_sync_lds();
  a.v = load4(scratch + (lane & 15) * 16 + 4 * (lane >> 4));
}

constexpr bool kCToANeedsScratch = true;

#endif

VG_DEVICE void zero(FragC& c) {
  for (int i = 0; i < kCElems; ++i) c.c[i] = 0.f;
}

}  // namespace vidgraph::kernels::mma
