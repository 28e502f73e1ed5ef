// Small helpers shared by the GPU path's files (gpu_path.cpp, gpu_staging.cpp): the current LibTorch
// stream as the kernels' `void*`, dtype mapping, launcher status checks, and row views of [B, S, H, D]
// data in either token order. GPU builds only (VIDGRAPH_ATTENTION_GPU).
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#if defined(USE_ROCM)
#include <c10/hip/HIPStream.h>
#else
#include <c10/cuda/CUDAStream.h>
#endif

#include <cstdint>

namespace vidgraph::attention::gpu {

namespace vk = vidgraph::kernels;

inline void* current_stream(const at::Tensor& t) {
#if defined(USE_ROCM)
  return c10::hip::getCurrentHIPStream(t.device().index()).stream();
#else
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#endif
}

inline bool is_half(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

inline bool is_kernel_dtype(at::ScalarType t) {
  return t == at::kBFloat16 || t == at::kHalf || t == at::kFloat;
}

inline vk::ElementType element_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16:
      return vk::ElementType::BFloat16;
    case at::kHalf:
      return vk::ElementType::Float16;
    case at::kFloat:
      return vk::ElementType::Float32;
    default:
      TORCH_CHECK(false, "attention GPU path: unsupported dtype ", t.scalar_type());
  }
}

inline void check_status(vk::Status s, const char* what) {
  TORCH_CHECK(s == vk::Status::Ok, "attention GPU path: ", what, ": ", vk::last_error());
}

// A 4-D tensor whose rows (last dim) the kernels can read: last dim contiguous, 16-byte aligned data
// and batch/sequence/head strides (in elements) multiples of 16 bytes.
inline bool rows_ready(const at::Tensor& t) {
  if (t.dim() != 4 || t.stride(3) != 1) return false;
  const int64_t vec = 16 / int64_t(t.element_size());
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (t.size(i) > 1 && t.stride(i) % vec != 0) return false;
  return true;
}

// `t` if rows_ready, else a contiguous copy (rows of 64/128 elements from the caching allocator are).
inline at::Tensor rows_ready_or_copy(const at::Tensor& t) {
  return rows_ready(t) ? t : t.contiguous();
}

// Row view of 4-D data: dims (0, seq_dim, head_dim_index) are (B, S, H); the last dim is D.
inline vk::TensorView rows_view(const at::Tensor& t, int seq_dim, int head_dim_index) {
  vk::TensorView v;
  v.data = t.data_ptr();
  v.stride_b = t.size(0) > 1 ? t.stride(0) : 0;
  v.stride_s = t.size(seq_dim) > 1 ? t.stride(seq_dim) : 0;
  v.stride_h = t.size(head_dim_index) > 1 ? t.stride(head_dim_index) : 0;
  return v;
}

}  // namespace vidgraph::attention::gpu
