// 16-bit element types of the attention kernels and their conversions to and from fp32.
// Storage is a raw uint16_t in both vendors so that tiles move as bits; arithmetic is fp32.
// bf16 rounds to nearest even (NaN kept quiet), fp16 uses the compiler's conversion.
#pragma once

#include "vendor.h"

#include <cstdint>

#if defined(VG_PLATFORM_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace vidgraph::kernels {

struct Bf16 {
  uint16_t bits;
};
struct Fp16 {
  uint16_t bits;
};

template <typename T>
struct Numeric;

template <>
struct Numeric<Bf16> {
  static VG_DEVICE float to_float(uint16_t b) { return __uint_as_float(uint32_t(b) << 16); }
  static VG_DEVICE uint16_t from_float(float f) {
#if defined(VG_PLATFORM_CUDA)
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
#endif
  }
};

template <>
struct Numeric<Fp16> {
  static VG_DEVICE float to_float(uint16_t b) {
#if defined(VG_PLATFORM_CUDA)
    return __half2float(__ushort_as_half(b));
#else
    _Float16 h;
    __builtin_memcpy(&h, &b, 2);
    return float(h);
#endif
  }
  static VG_DEVICE uint16_t from_float(float f) {
#if defined(VG_PLATFORM_CUDA)
    return __half_as_ushort(__float2half_rn(f));
#else
    _Float16 h = _Float16(f);
    uint16_t b;
    __builtin_memcpy(&b, &h, 2);
    return b;
#endif
  }
};

// Packs two fp32 values into one 32-bit register of two 16-bit elements (low = first).
template <typename T>
VG_DEVICE uint32_t pack2(float lo, float hi) {
  return uint32_t(Numeric<T>::from_float(lo)) | (uint32_t(Numeric<T>::from_float(hi)) << 16);
}

}  // namespace vidgraph::kernels
