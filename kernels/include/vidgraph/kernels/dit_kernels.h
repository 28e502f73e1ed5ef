// Fused elementwise kernels of a DiT block (kernels/ layer): the passes between its GEMMs, one
// kernel each. Conventions as in attention_kernels.h: framework-free params, device pointers,
// streams as `void*`, a Status back (last_error() says why), nothing synchronises.
//
// Layouts: activations are [batch, rows, dim] contiguous; dim is a multiple of 4 and every pointer
// 16-byte aligned. Modulation vectors come per group of rows: row l of batch b reads vector
// (b, l / (rows / groups)), `groups` dividing `rows`. Arithmetic is fp32, with one rounding to the
// output type at the end.
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

#include <cstdint>

namespace vidgraph::kernels {

// fp32 vectors of `dim` contiguous elements, one per (batch, group); data == nullptr: absent.
struct GroupVectors {
  const float* data = nullptr;
  int64_t stride_b = 0, stride_g = 0;  // in elements
};

// out = LayerNorm(x) [· weight + bias] [· (1 + scale) + shift], in out_type (bf16 or fp16).
struct NormModulateParams {
  int batch = 0, rows = 0, dim = 0, groups = 1;
  const float* x = nullptr;       // fp32
  const float* weight = nullptr;  // [dim] or nullptr (no affine)
  const float* bias = nullptr;    // [dim] or nullptr
  GroupVectors shift, scale;      // both or neither
  float eps = 1e-6f;
  ElementType out_type = ElementType::BFloat16;
  void* out = nullptr;
};
Status norm_modulate(const NormModulateParams& p, void* stream);

// out = RMSNorm(y) · weight, then when cos/sin are given RoPE on each head's interleaved pairs:
// pair j of a head (elements 2j, 2j+1) of row l turns by the angle with cos[l, j], sin[l, j].
struct RmsNormRopeParams {
  int batch = 0, rows = 0, dim = 0, heads = 1;  // head_dim = dim / heads, even
  ElementType type = ElementType::BFloat16;     // of y and out (bf16 or fp16)
  const void* y = nullptr;
  void* out = nullptr;                          // may be y
  const float* weight = nullptr;                // [dim]
  float eps = 1e-6f;
  const float* cos = nullptr;                   // [rows, head_dim / 2] or nullptr (no RoPE)
  const float* sin = nullptr;
};
Status rms_norm_rope(const RmsNormRopeParams& p, void* stream);

// out = h + y · gate (gate absent: 1); h and out fp32 (out may be h), y of y_type (bf16 or fp16).
struct GateResidualParams {
  int batch = 0, rows = 0, dim = 0, groups = 1;
  const float* h = nullptr;
  ElementType y_type = ElementType::BFloat16;
  const void* y = nullptr;
  GroupVectors gate;
  float* out = nullptr;
};
Status gate_residual(const GateResidualParams& p, void* stream);

}  // namespace vidgraph::kernels
