// Host helpers of the Hopper device check (hopper_check.cu): CUDA error checks and 16-bit
// conversions on the host.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hopper_check {
#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    const cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                             \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// ---- host 16-bit conversions (round to nearest even) ---------------------------------------------
inline uint16_t host_from_float(float f, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
  return __half_as_ushort(__float2half_rn(f));
}
inline float host_to_float(uint16_t b, bool bf16) {
  if (bf16) {
    const uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  return __half2float(__ushort_as_half(b));
}

}  // namespace hopper_check
