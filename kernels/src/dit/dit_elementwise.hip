// The DiT block's fused elementwise kernels (dit_kernels.h). The norms run one block of threads per
// row and read the row three times (statistics, then the output): the second and third reads hit
// the cache, so each kernel moves a row through memory once. Four elements per thread and step.
#include "../common/check.h"
#include "../common/numeric.h"
#include "../common/vendor.h"
#include "../common/vector_io.h"
#include "vidgraph/kernels/dit_kernels.h"

#include <algorithm>
#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kThreads = 256;

// The sum of `v` over the block, in every thread, in a fixed order (deterministic).
VG_DEVICE float block_sum(float v, float* scratch) {
  for (int m = kWarpSize / 2; m > 0; m /= 2) v += VG_SHFL_XOR(v, m);
  __syncthreads();  // the previous call's readers are done with scratch
  if (threadIdx.x % kWarpSize == 0) scratch[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  float s = 0.f;
  for (int w = 0; w < kThreads / kWarpSize; ++w) s += scratch[w];
  return s;
}

VG_DEVICE const float* group_vector(const GroupVectors& g, int b, int group) {
  return g.data ? g.data + b * g.stride_b + group * g.stride_g : nullptr;
}

template <typename Out>
__global__ void __launch_bounds__(kThreads) norm_modulate_kernel(NormModulateParams p) {
  __shared__ float scratch[kThreads / kWarpSize];
  const int64_t row = blockIdx.x;
  const int b = int(row / p.rows), l = int(row % p.rows);
  const int group = l / (p.rows / p.groups);
  const float* x = p.x + row * p.dim;
  float s = 0.f;
  for (int c = threadIdx.x * 4; c < p.dim; c += kThreads * 4) {
    const float4 v = load_f4(x + c);
    s += (v.x + v.y) + (v.z + v.w);
  }
  const float mean = block_sum(s, scratch) / float(p.dim);
  float q = 0.f;
  for (int c = threadIdx.x * 4; c < p.dim; c += kThreads * 4) {
    const float4 v = load_f4(x + c);
    const float d0 = v.x - mean, d1 = v.y - mean, d2 = v.z - mean, d3 = v.w - mean;
    q += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
  }
  const float rstd = rsqrtf(block_sum(q, scratch) / float(p.dim) + p.eps);
  const float* shift = group_vector(p.shift, b, group);
  const float* scale = group_vector(p.scale, b, group);
  for (int c = threadIdx.x * 4; c < p.dim; c += kThreads * 4) {
    const float4 v = load_f4(x + c);
    float o[4] = {(v.x - mean) * rstd, (v.y - mean) * rstd, (v.z - mean) * rstd, (v.w - mean) * rstd};
    if (p.weight) {
      const float4 w = load_f4(p.weight + c);
      o[0] *= w.x, o[1] *= w.y, o[2] *= w.z, o[3] *= w.w;
    }
    if (p.bias) {
      const float4 bb = load_f4(p.bias + c);
      o[0] += bb.x, o[1] += bb.y, o[2] += bb.z, o[3] += bb.w;
    }
    if (shift) {
      const float4 sc = load_f4(scale + c), sh = load_f4(shift + c);
      o[0] = o[0] * (1.f + sc.x) + sh.x, o[1] = o[1] * (1.f + sc.y) + sh.y;
      o[2] = o[2] * (1.f + sc.z) + sh.z, o[3] = o[3] * (1.f + sc.w) + sh.w;
    }
    store4<Out>(p.out, row * p.dim + c, o);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) rms_norm_rope_kernel(RmsNormRopeParams p) {
  __shared__ float scratch[kThreads / kWarpSize];
  const int64_t row = blockIdx.x;
  const int l = int(row % p.rows);
  const int64_t base = row * p.dim;
  float s = 0.f;
  for (int c = threadIdx.x * 4; c < p.dim; c += kThreads * 4) {
    float v[4];
    load4<T>(p.y, base + c, v);
    s += (v[0] * v[0] + v[1] * v[1]) + (v[2] * v[2] + v[3] * v[3]);
  }
  const float inv = rsqrtf(block_sum(s, scratch) / float(p.dim) + p.eps);
  const int pairs = p.dim / p.heads / 2;  // per head
  for (int c = threadIdx.x * 4; c < p.dim; c += kThreads * 4) {
    float v[4];
    load4<T>(p.y, base + c, v);
    const float4 w = load_f4(p.weight + c);
    v[0] = v[0] * inv * w.x, v[1] = v[1] * inv * w.y, v[2] = v[2] * inv * w.z, v[3] = v[3] * inv * w.w;
    if (p.cos) {
      for (int k = 0; k < 2; ++k) {
        const int64_t j = int64_t(l) * pairs + (c / 2 + k) % pairs;
        const float cs = p.cos[j], sn = p.sin[j], x0 = v[2 * k], x1 = v[2 * k + 1];
        v[2 * k] = x0 * cs - x1 * sn;
        v[2 * k + 1] = x0 * sn + x1 * cs;
      }
    }
    store4<T>(p.out, base + c, v);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) gate_residual_kernel(GateResidualParams p, int64_t vectors) {
  const int per_row = p.dim / 4, rows_per_group = p.rows / p.groups;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < vectors;
       i += int64_t(gridDim.x) * kThreads) {
    const int64_t row = i / per_row, e = i * 4;
    const int c = int(i % per_row) * 4;
    const float4 h = load_f4(p.h + e);
    float y[4];
    load4<T>(p.y, e, y);
    if (p.gate.data) {
      const int b = int(row / p.rows), group = int(row % p.rows) / rows_per_group;
      const float4 g = load_f4(group_vector(p.gate, b, group) + c);
      y[0] *= g.x, y[1] *= g.y, y[2] *= g.z, y[3] *= g.w;
    }
    *reinterpret_cast<float4*>(p.out + e) = make_float4(h.x + y[0], h.y + y[1], h.z + y[2], h.w + y[3]);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status check_rows(const char* who, int batch, int rows, int dim, int groups) {
  VG_REQUIRE(batch > 0 && rows > 0 && dim > 0 && groups > 0,
             std::string(who) + ": batch, rows, dim and groups must be positive.");
  VG_REQUIRE(dim % 4 == 0, std::string(who) + ": dim (" + std::to_string(dim) + ") must be a multiple of 4.");
  VG_REQUIRE(rows % groups == 0, std::string(who) + ": the " + std::to_string(groups) +
                                     " groups do not divide the " + std::to_string(rows) + " rows.");
  VG_REQUIRE(int64_t(batch) * rows <= int64_t(0x7fffffff),
             std::string(who) + ": batch x rows must fit in 31 bits.");
  return Status::Ok;
}

Status check_vectors(const char* who, const GroupVectors& g) {
  VG_REQUIRE(!g.data || (aligned16(g.data) && g.stride_b % 4 == 0 && g.stride_g % 4 == 0),
             std::string(who) + ": modulation vectors must be 16-byte aligned with strides of 4 elements.");
  return Status::Ok;
}

bool is_half_type(ElementType t) { return t == ElementType::BFloat16 || t == ElementType::Float16; }

}  // namespace

Status norm_modulate(const NormModulateParams& p, void* stream) {
  Status st = check_rows("norm_modulate", p.batch, p.rows, p.dim, p.groups);
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.x && p.out && aligned16(p.x) && aligned16(p.out),
             "norm_modulate: x and out must be given and 16-byte aligned.");
  VG_REQUIRE((!p.weight || aligned16(p.weight)) && (!p.bias || aligned16(p.bias)),
             "norm_modulate: weight and bias must be 16-byte aligned.");
  VG_REQUIRE(!p.shift.data == !p.scale.data, "norm_modulate: give both shift and scale, or neither.");
  if ((st = check_vectors("norm_modulate", p.shift)) != Status::Ok) return st;
  if ((st = check_vectors("norm_modulate", p.scale)) != Status::Ok) return st;
  VG_REQUIRE(is_half_type(p.out_type), "norm_modulate: the output must be bf16 or fp16.");
  const dim3 grid(unsigned(int64_t(p.batch) * p.rows));
  auto s = static_cast<vgStream_t>(stream);
  if (p.out_type == ElementType::BFloat16)
    norm_modulate_kernel<Bf16><<<grid, kThreads, 0, s>>>(p);
  else
    norm_modulate_kernel<Fp16><<<grid, kThreads, 0, s>>>(p);
  VG_CHECK_LAUNCH("norm_modulate");
  return Status::Ok;
}

Status rms_norm_rope(const RmsNormRopeParams& p, void* stream) {
  Status st = check_rows("rms_norm_rope", p.batch, p.rows, p.dim, 1);
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.heads > 0 && p.dim % p.heads == 0 && (p.dim / p.heads) % 2 == 0,
             "rms_norm_rope: the heads must split dim into even head dims.");
  VG_REQUIRE(p.y && p.out && p.weight && aligned16(p.y) && aligned16(p.out) && aligned16(p.weight),
             "rms_norm_rope: y, out and weight must be given and 16-byte aligned.");
  VG_REQUIRE(!p.cos == !p.sin, "rms_norm_rope: give both cos and sin, or neither.");
  VG_REQUIRE(is_half_type(p.type), "rms_norm_rope: y must be bf16 or fp16.");
  const dim3 grid(unsigned(int64_t(p.batch) * p.rows));
  auto s = static_cast<vgStream_t>(stream);
  if (p.type == ElementType::BFloat16)
    rms_norm_rope_kernel<Bf16><<<grid, kThreads, 0, s>>>(p);
  else
    rms_norm_rope_kernel<Fp16><<<grid, kThreads, 0, s>>>(p);
  VG_CHECK_LAUNCH("rms_norm_rope");
  return Status::Ok;
}

Status gate_residual(const GateResidualParams& p, void* stream) {
  Status st = check_rows("gate_residual", p.batch, p.rows, p.dim, p.groups);
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.h && p.y && p.out && aligned16(p.h) && aligned16(p.y) && aligned16(p.out),
             "gate_residual: h, y and out must be given and 16-byte aligned.");
  if ((st = check_vectors("gate_residual", p.gate)) != Status::Ok) return st;
  VG_REQUIRE(is_half_type(p.y_type), "gate_residual: y must be bf16 or fp16.");
  const int64_t vectors = int64_t(p.batch) * p.rows * (p.dim / 4);
  const int64_t blocks = std::min<int64_t>((vectors + kThreads - 1) / kThreads, int64_t(1) << 20);
  auto s = static_cast<vgStream_t>(stream);
  if (p.y_type == ElementType::BFloat16)
    gate_residual_kernel<Bf16><<<dim3(unsigned(blocks)), kThreads, 0, s>>>(p, vectors);
  else
    gate_residual_kernel<Fp16><<<dim3(unsigned(blocks)), kThreads, 0, s>>>(p, vectors);
  VG_CHECK_LAUNCH("gate_residual");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
