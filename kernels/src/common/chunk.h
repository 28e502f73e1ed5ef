// Rows of the VSA staging kernels as 16-byte chunks in fp32 registers, and single elements, for
// bf16, fp16 and fp32 tensors (arithmetic in fp32, each output rounded once).
#pragma once

#include "check.h"
#include "numeric.h"

#include <type_traits>

namespace vidgraph::kernels {

// One 16-byte chunk as fp32 values: 8 bf16/fp16 elements or 4 fp32.
template <typename T>
struct Chunk {
  static constexpr int kElems = 8;
  float v[kElems];
  VG_DEVICE void load(const void* p) {
    const uint4 raw = *static_cast<const uint4*>(p);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = Numeric<T>::to_float(uint16_t(w[i] & 0xffffu));
      v[2 * i + 1] = Numeric<T>::to_float(uint16_t(w[i] >> 16));
    }
  }
  VG_DEVICE void store(void* p) const {
    *static_cast<uint4*>(p) = make_uint4(pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]),
                                         pack2<T>(v[4], v[5]), pack2<T>(v[6], v[7]));
  }
};

template <>
struct Chunk<float> {
  static constexpr int kElems = 4;
  float v[kElems];
  VG_DEVICE void load(const void* p) {
    const float4 raw = *static_cast<const float4*>(p);
    v[0] = raw.x, v[1] = raw.y, v[2] = raw.z, v[3] = raw.w;
  }
  VG_DEVICE void store(void* p) const { *static_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]); }
};

template <typename T>
VG_DEVICE float scalar_at(const void* p) {
  if constexpr (std::is_same<T, float>::value) {
    return *static_cast<const float*>(p);
  } else {
    return Numeric<T>::to_float(*static_cast<const uint16_t*>(p));
  }
}

template <typename T>
VG_DEVICE void store_scalar(void* p, float v) {
  if constexpr (std::is_same<T, float>::value) {
    *static_cast<float*>(p) = v;
  } else {
    *static_cast<uint16_t*>(p) = Numeric<T>::from_float(v);
  }
}

// Address of element `e` of row (b, row, h) of a view.
template <typename T>
VG_DEVICE char* element_at(const TensorView& t, int b, int64_t row, int h, int e) {
  return static_cast<char*>(t.data) + (b * t.stride_b + row * t.stride_s + h * t.stride_h + e) * int64_t(sizeof(T));
}

}  // namespace vidgraph::kernels
