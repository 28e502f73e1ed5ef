// Argument checks shared by the FlashAttention launchers (host only).
#pragma once

#include "../common/check.h"
#include "vidgraph/kernels/attention_kernels.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace vidgraph::kernels::detail {

inline Status check_common(ElementType dtype, int batch, int heads, int seq_q, int seq_kv,
                           int head_dim, std::initializer_list<const TensorView*> views,
                           const char* who) {
  const std::string w(who);
  VG_REQUIRE(dtype == ElementType::BFloat16 || dtype == ElementType::Float16,
             w + ": tensors must be bf16 or fp16.");
  VG_REQUIRE(head_dim == 64 || head_dim == 128,
             w + ": head dim " + std::to_string(head_dim) + " is not supported (64 or 128).");
  VG_REQUIRE(batch > 0 && heads > 0 && seq_q > 0 && seq_kv > 0,
             w + ": batch, heads and sequence lengths must be positive.");
  VG_REQUIRE(batch <= 65535 && heads <= 65535, w + ": batch and heads must be <= 65535.");
  for (const TensorView* v : views) {
    VG_REQUIRE(v->data != nullptr, w + ": a tensor pointer is null.");
    VG_REQUIRE(reinterpret_cast<uintptr_t>(v->data) % 16 == 0,
               w + ": tensor data must be 16-byte aligned.");
    VG_REQUIRE(v->stride_b % 8 == 0 && v->stride_s % 8 == 0 && v->stride_h % 8 == 0,
               w + ": batch, sequence and head strides must be multiples of 8 elements.");
  }
  return Status::Ok;
}

}  // namespace vidgraph::kernels::detail
