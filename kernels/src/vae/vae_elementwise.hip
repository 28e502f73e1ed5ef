// The Wan VAE's fused elementwise kernels (vae_kernels.h). Rows are short (96 to 1024 channels)
// and many (every pixel of every frame), so the norm runs one warp per row: the row's sum of
// squares by shuffles, then its second read from L1. Four elements per lane and step.
#include "../common/check.h"
#include "../common/numeric.h"
#include "../common/vector_io.h"
#include "../common/vendor.h"
#include "vidgraph/kernels/vae_kernels.h"

#include <algorithm>
#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / kWarpSize;

template <typename T>
VG_DEVICE void add_bias(const void* bias, int c, float (&v)[4]) {
  if (!bias) return;
  float b[4];
  load4<T>(bias, c, b);
  v[0] += b[0], v[1] += b[1], v[2] += b[2], v[3] += b[3];
}

template <typename T>
__global__ void __launch_bounds__(kThreads) rms_norm_silu_kernel(RmsNormSiluParams p) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= p.rows) return;  // the whole warp: the shuffles below see every lane
  const int lane = threadIdx.x % kWarpSize;
  const int64_t base = row * p.dim;
  float s = 0.f;
  for (int c = lane * 4; c < p.dim; c += kWarpSize * 4) {
    float v[4];
    load4<T>(p.x, base + c, v);
    add_bias<T>(p.bias, c, v);
    s += (v[0] * v[0] + v[1] * v[1]) + (v[2] * v[2] + v[3] * v[3]);
  }
  for (int m = kWarpSize / 2; m > 0; m /= 2) s += VG_SHFL_XOR(s, m);
  const float k = sqrtf(float(p.dim)) / fmaxf(sqrtf(s), 1e-12f);
  for (int c = lane * 4; c < p.dim; c += kWarpSize * 4) {
    float v[4], g[4];
    load4<T>(p.x, base + c, v);
    add_bias<T>(p.bias, c, v);
    load4<T>(p.gamma, c, g);
    for (int i = 0; i < 4; ++i) {
      v[i] *= k * g[i];
      if (p.silu) v[i] /= 1.f + expf(-v[i]);
    }
    store4<T>(p.out, base + c, v);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) bias_residual_kernel(BiasResidualParams p, int64_t vectors) {
  const int per_row = p.dim / 4;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < vectors; i += int64_t(gridDim.x) * kThreads) {
    const int64_t e = i * 4;
    float y[4], h[4];
    load4<T>(p.y, e, y);
    load4<T>(p.h, e, h);
    add_bias<T>(p.bias, int(i % per_row) * 4, y);
    for (int k = 0; k < 4; ++k) y[k] += h[k];
    store4<T>(p.y, e, y);
  }
}

bool aligned8(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

Status check_rows(const char* who, int64_t rows, int dim, ElementType type) {
  VG_REQUIRE(rows > 0 && dim > 0, std::string(who) + ": rows and dim must be positive.");
  VG_REQUIRE(dim % 4 == 0, std::string(who) + ": dim (" + std::to_string(dim) + ") must be a multiple of 4.");
  VG_REQUIRE(type == ElementType::BFloat16 || type == ElementType::Float16,
             std::string(who) + ": the activations must be bf16 or fp16.");
  return Status::Ok;
}

}  // namespace

Status rms_norm_silu(const RmsNormSiluParams& p, void* stream) {
  Status st = check_rows("rms_norm_silu", p.rows, p.dim, p.type);
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.x && p.out && p.gamma && aligned8(p.x) && aligned8(p.out) && aligned8(p.gamma) &&
                 (!p.bias || aligned8(p.bias)),
             "rms_norm_silu: x, gamma and out must be given, and they and bias 8-byte aligned.");
  VG_REQUIRE((p.rows + kRowsPerBlock - 1) / kRowsPerBlock <= int64_t(0x7fffffff),
             "rms_norm_silu: too many rows for one launch.");
  const dim3 grid(unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock));
  auto s = static_cast<vgStream_t>(stream);
  if (p.type == ElementType::BFloat16)
    rms_norm_silu_kernel<Bf16><<<grid, kThreads, 0, s>>>(p);
  else
    rms_norm_silu_kernel<Fp16><<<grid, kThreads, 0, s>>>(p);
  VG_CHECK_LAUNCH("rms_norm_silu");
  return Status::Ok;
}

Status bias_residual(const BiasResidualParams& p, void* stream) {
  Status st = check_rows("bias_residual", p.rows, p.dim, p.type);
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.y && p.h && aligned8(p.y) && aligned8(p.h) && (!p.bias || aligned8(p.bias)),
             "bias_residual: y and h must be given, and they and bias 8-byte aligned.");
  const int64_t vectors = p.rows * (p.dim / 4);
  const int64_t blocks = std::min<int64_t>((vectors + kThreads - 1) / kThreads, int64_t(1) << 20);
  auto s = static_cast<vgStream_t>(stream);
  if (p.type == ElementType::BFloat16)
    bias_residual_kernel<Bf16><<<dim3(unsigned(blocks)), kThreads, 0, s>>>(p, vectors);
  else
    bias_residual_kernel<Fp16><<<dim3(unsigned(blocks)), kThreads, 0, s>>>(p, vectors);
  VG_CHECK_LAUNCH("bias_residual");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
