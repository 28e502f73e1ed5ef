// Four elements at a time between memory and fp32 registers, for the elementwise kernels: fp32 as
// one float4, 16-bit types (Numeric<T>) as one 8-byte word. Addresses 16- / 8-byte aligned.
#pragma once

#include "numeric.h"
#include "vendor.h"

#include <cstdint>

namespace vidgraph::kernels {

VG_DEVICE float4 load_f4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// Four 16-bit elements at `base + e` as floats.
template <typename T>
VG_DEVICE void load4(const void* base, int64_t e, float (&v)[4]) {
  const uint2 u = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(base) + e);
  v[0] = Numeric<T>::to_float(uint16_t(u.x & 0xffffu));
  v[1] = Numeric<T>::to_float(uint16_t(u.x >> 16));
  v[2] = Numeric<T>::to_float(uint16_t(u.y & 0xffffu));
  v[3] = Numeric<T>::to_float(uint16_t(u.y >> 16));
}

template <typename T>
VG_DEVICE void store4(void* base, int64_t e, const float (&v)[4]) {
  uint2 u;
  u.x = pack2<T>(v[0], v[1]);
  u.y = pack2<T>(v[2], v[3]);
  *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + e) = u;
}

}  // namespace vidgraph::kernels
