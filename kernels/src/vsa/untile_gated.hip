// VSA's output stage in one pass each way: the gated untile (fine + gate · coarse[tile], back to
// token order) and its gradient. One pass replaces a gate tiling, a broadcast multiply-add in the
// tiled layout and an untiling gather (three reads and writes of a [B, S, H, D] tensor).
// Rows move as 16-byte chunks; arithmetic is fp32, each output rounded once.
#include "../common/check.h"
#include "../common/chunk.h"
#include "../common/numeric.h"
#include "../common/vendor.h"

#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kTileSlots = 64;
constexpr int kThreads = 256;

// One thread per 16-byte chunk of an output row: out[b, s, h] = fine[b, slot[s], h] + gate · coarse.
template <typename T>
__global__ void untile_gated_kernel(int64_t total, int tokens, int heads, int chunks, bool gate_per_row,
                                    TensorView fine, TensorView gate, TensorView coarse, TensorView out,
                                    const int32_t* slot) {
  constexpr int n = Chunk<T>::kElems;
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= total) return;
  const int e = int(c % chunks) * n;
  int64_t rest = c / chunks;
  const int h = int(rest % heads);
  rest /= heads;
  const int s = int(rest % tokens);
  const int b = int(rest / tokens);
  const int row = slot[s];
  Chunk<T> f, g, co;
  f.load(element_at<T>(fine, b, row, h, e));
  co.load(element_at<T>(coarse, b, row / kTileSlots, h, e));
  if (gate_per_row) {
    const float g1 = scalar_at<T>(element_at<T>(gate, b, s, h, 0));
#pragma unroll
    for (int i = 0; i < n; ++i) g.v[i] = g1;
  } else {
    g.load(element_at<T>(gate, b, s, h, e));
  }
#pragma unroll
  for (int i = 0; i < n; ++i) f.v[i] = fmaf(g.v[i], co.v[i], f.v[i]);
  f.store(element_at<T>(out, b, s, h, e));
}

// One block per (tile, batch, group of heads); each thread owns one chunk of one head and walks the
// tile's 64 slots: d_fine = grad (0 at pads), d_gate = grad · coarse, d_coarse = Σ grad · gate
// accumulated in registers (deterministic, no atomics). A per-row gate's gradient sums the row's
// chunks through shared memory.
template <typename T>
__global__ void untile_gated_backward_kernel(int heads, int chunks, bool gate_per_row, TensorView grad,
                                             TensorView gate, TensorView coarse, const int32_t* token,
                                             TensorView d_fine, TensorView d_gate, TensorView d_coarse) {
  constexpr int n = Chunk<T>::kElems;
  __shared__ float row_sums[kThreads];
  const int t = blockIdx.x, b = blockIdx.y;
  const int heads_per_block = kThreads / chunks;
  const int local_head = threadIdx.x / chunks, part = threadIdx.x % chunks;
  const int h = blockIdx.z * heads_per_block + local_head;
  const bool active = local_head < heads_per_block && h < heads;
  const int e = part * n;
  Chunk<T> co;
  float acc[n] = {};
  if (active) co.load(element_at<T>(coarse, b, t, h, e));
  for (int r = 0; r < kTileSlots; ++r) {
    const int64_t slot = int64_t(t) * kTileSlots + r;
    const int s = token[slot];  // uniform over the block
    Chunk<T> g;
    if (active) {
      if (s >= 0) {
        g.load(element_at<T>(grad, b, s, h, e));
      } else {
#pragma unroll
        for (int i = 0; i < n; ++i) g.v[i] = 0.f;
      }
      g.store(element_at<T>(d_fine, b, slot, h, e));
    }
    if (s < 0) continue;
    if (gate_per_row) {
      float dot = 0.f, g1 = 0.f;
      if (active) {
        g1 = scalar_at<T>(element_at<T>(gate, b, s, h, 0));
#pragma unroll
        for (int i = 0; i < n; ++i) {
          dot = fmaf(g.v[i], co.v[i], dot);
          acc[i] = fmaf(g.v[i], g1, acc[i]);
        }
      }
      row_sums[threadIdx.x] = dot;
      __syncthreads();
      if (active && part == 0) {
        float sum = 0.f;
        for (int i = 0; i < chunks; ++i) sum += row_sums[threadIdx.x + i];
        store_scalar<T>(element_at<T>(d_gate, b, s, h, 0), sum);
      }
      __syncthreads();
    } else if (active) {
      Chunk<T> gv, dg;
      gv.load(element_at<T>(gate, b, s, h, e));
#pragma unroll
      for (int i = 0; i < n; ++i) {
        dg.v[i] = g.v[i] * co.v[i];
        acc[i] = fmaf(g.v[i], gv.v[i], acc[i]);
      }
      dg.store(element_at<T>(d_gate, b, s, h, e));
    }
  }
  if (!active) return;
  Chunk<T> out;
#pragma unroll
  for (int i = 0; i < n; ++i) out.v[i] = acc[i];
  out.store(element_at<T>(d_coarse, b, t, h, e));
}

int element_bytes(ElementType t) { return t == ElementType::Float32 ? 4 : 2; }

// Rows of head_dim elements (gate: of gate_dim) start 16-byte aligned; a per-row gate only needs
// element alignment.
Status check_rows(const TensorView& v, int elem_bytes, bool chunked, const char* who) {
  VG_REQUIRE(v.data != nullptr, std::string(who) + ": a tensor pointer is null.");
  if (!chunked) return Status::Ok;
  const int64_t vec = 16 / elem_bytes;
  VG_REQUIRE(reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && v.stride_b % vec == 0 && v.stride_s % vec == 0 &&
                 v.stride_h % vec == 0,
             std::string(who) + ": tensors must be 16-byte aligned with 16-byte aligned rows.");
  return Status::Ok;
}

Status check_shapes(ElementType dtype, int batch, int rows, int heads, int head_dim, int gate_dim,
                    const char* who) {
  VG_REQUIRE(batch > 0 && rows > 0 && heads > 0 && head_dim > 0 && batch <= 65535,
             std::string(who) + ": sizes must be positive (batch <= 65535).");
  VG_REQUIRE(head_dim * element_bytes(dtype) % 16 == 0 && head_dim * element_bytes(dtype) / 16 <= kThreads,
             std::string(who) + ": a row of head_dim elements must be a multiple of 16 bytes (at most 4 KiB).");
  VG_REQUIRE(gate_dim == 1 || gate_dim == head_dim,
             std::string(who) + ": the gate must have one value per row or per element.");
  return Status::Ok;
}

#define VG_RETURN_IF_ERROR(expr)          \
  do {                                    \
    const Status st_ = (expr);            \
    if (st_ != Status::Ok) return st_;    \
  } while (0)

}  // namespace

Status untile_gated(ElementType dtype, int batch, int tokens, int heads, int head_dim, int gate_dim,
                    TensorView fine, TensorView gate, TensorView coarse, TensorView out, const int32_t* slot,
                    void* stream) {
  const char* who = "untile_gated";
  VG_RETURN_IF_ERROR(check_shapes(dtype, batch, tokens, heads, head_dim, gate_dim, who));
  VG_REQUIRE(slot != nullptr, "untile_gated: the slot index is null.");
  const int eb = element_bytes(dtype);
  VG_RETURN_IF_ERROR(check_rows(fine, eb, true, who));
  VG_RETURN_IF_ERROR(check_rows(coarse, eb, true, who));
  VG_RETURN_IF_ERROR(check_rows(out, eb, true, who));
  VG_RETURN_IF_ERROR(check_rows(gate, eb, gate_dim != 1, who));
  const int chunks = head_dim * eb / 16;
  const int64_t total = int64_t(batch) * tokens * heads * chunks;
  const dim3 grid(unsigned((total + kThreads - 1) / kThreads));
  auto s = static_cast<vgStream_t>(stream);
  const bool per_row = gate_dim == 1;
  if (dtype == ElementType::BFloat16)
    untile_gated_kernel<Bf16><<<grid, kThreads, 0, s>>>(total, tokens, heads, chunks, per_row, fine, gate, coarse,
                                                        out, slot);
  else if (dtype == ElementType::Float16)
    untile_gated_kernel<Fp16><<<grid, kThreads, 0, s>>>(total, tokens, heads, chunks, per_row, fine, gate, coarse,
                                                        out, slot);
  else
    untile_gated_kernel<float><<<grid, kThreads, 0, s>>>(total, tokens, heads, chunks, per_row, fine, gate,
                                                         coarse, out, slot);
  VG_CHECK_LAUNCH("untile_gated");
  return Status::Ok;
}

Status untile_gated_backward(ElementType dtype, int batch, int tiles, int heads, int head_dim, int gate_dim,
                             TensorView grad, TensorView gate, TensorView coarse, const int32_t* token,
                             TensorView d_fine, TensorView d_gate, TensorView d_coarse, void* stream) {
  const char* who = "untile_gated_backward";
  VG_RETURN_IF_ERROR(check_shapes(dtype, batch, tiles, heads, head_dim, gate_dim, who));
  VG_REQUIRE(token != nullptr, "untile_gated_backward: the token index is null.");
  const int eb = element_bytes(dtype);
  for (const TensorView* v : {&grad, &coarse, &d_fine, &d_coarse}) VG_RETURN_IF_ERROR(check_rows(*v, eb, true, who));
  VG_RETURN_IF_ERROR(check_rows(gate, eb, gate_dim != 1, who));
  VG_RETURN_IF_ERROR(check_rows(d_gate, eb, gate_dim != 1, who));
  const int chunks = head_dim * eb / 16;
  const int heads_per_block = kThreads / chunks;
  const dim3 grid(unsigned(tiles), unsigned(batch), unsigned((heads + heads_per_block - 1) / heads_per_block));
  auto s = static_cast<vgStream_t>(stream);
  const bool per_row = gate_dim == 1;
  if (dtype == ElementType::BFloat16)
    untile_gated_backward_kernel<Bf16><<<grid, kThreads, 0, s>>>(heads, chunks, per_row, grad, gate, coarse, token,
                                                                 d_fine, d_gate, d_coarse);
  else if (dtype == ElementType::Float16)
    untile_gated_backward_kernel<Fp16><<<grid, kThreads, 0, s>>>(heads, chunks, per_row, grad, gate, coarse, token,
                                                                 d_fine, d_gate, d_coarse);
  else
    untile_gated_backward_kernel<float><<<grid, kThreads, 0, s>>>(heads, chunks, per_row, grad, gate, coarse, token,
                                                                  d_fine, d_gate, d_coarse);
  VG_CHECK_LAUNCH("untile_gated_backward");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
