// VSA tile kernels: row gather (untiling), tiling with the per-tile means in the same pass (fp32
// sums) and its gradient. Rows move as 16-byte chunks; D·element size must be a multiple of 16.
#include "../common/check.h"
#include "../common/chunk.h"
#include "../common/numeric.h"
#include "../common/vendor.h"

#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kTileSlots = 64;
constexpr int kMeanThreads = 128;

int element_bytes(ElementType t) { return t == ElementType::Float32 ? 4 : 2; }

__global__ void gather_rows_kernel(int64_t total, int rows_out, int heads, int chunks,
                                   TensorView in, TensorView out, const int32_t* index,
                                   int elem_bytes) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= total) return;
  const int part = int(c % chunks);
  int64_t rest = c / chunks;
  const int h = int(rest % heads);
  rest /= heads;
  const int i = int(rest % rows_out);
  const int b = int(rest / rows_out);
  const int src_row = index[i];
  auto addr = [&](const TensorView& t, int64_t row) {
    return static_cast<char*>(t.data) +
           (b * t.stride_b + row * t.stride_s + h * t.stride_h) * elem_bytes + part * 16;
  };
  uint4 v = make_uint4(0, 0, 0, 0);
  if (src_row >= 0) v = *reinterpret_cast<const uint4*>(addr(in, src_row));
  *reinterpret_cast<uint4*>(addr(out, i)) = v;
}

// One block per (tile, batch, slice of the (head, chunk) pairs); each thread gathers its chunk of
// the tile's 64 rows and sums them in fp32, so the means cost no second read of the tiled tensor.
template <typename T>
__global__ void tile_with_mean_kernel(int tiles, int heads, int chunks, TensorView in, TensorView out,
                                      const int32_t* index, const int32_t* tile_valid, float* mean) {
  constexpr int kElems = Chunk<T>::kElems;
  const int t = blockIdx.x, b = blockIdx.y;
  const int e = blockIdx.z * blockDim.x + threadIdx.x;
  if (e >= heads * chunks) return;
  const int h = e / chunks, col = (e % chunks) * kElems;
  float sum[kElems] = {};
#pragma unroll 8
  for (int r = 0; r < kTileSlots; ++r) {
    const int64_t i = int64_t(t) * kTileSlots + r;
    const int src = index[i];
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (src >= 0) raw = *reinterpret_cast<const uint4*>(element_at<T>(in, b, src, h, col));
    *reinterpret_cast<uint4*>(element_at<T>(out, b, i, h, col)) = raw;
    if (mean != nullptr) {
      Chunk<T> c;
      c.load(&raw);
#pragma unroll
      for (int j = 0; j < kElems; ++j) sum[j] += c.v[j];
    }
  }
  if (mean == nullptr) return;
  const int n = tile_valid[t];
  const float inv = n > 0 ? 1.f / float(n) : 0.f;
  float* m = mean + ((int64_t(b) * tiles + t) * heads + h) * (chunks * kElems) + col;
#pragma unroll
  for (int j = 0; j < kElems; ++j) m[j] = sum[j] * inv;
}

// One thread per 16-byte chunk of a token row: dx[b, s, h] = d_tiled[b, slot[s], h] plus, when given,
// d_mean[b, tile, h] / tile_valid[tile] (fp32 sum, rounded once).
template <typename T>
__global__ void tile_with_mean_backward_kernel(int64_t total, int tokens, int tiles, int heads, int chunks,
                                               TensorView d_tiled, const float* d_mean, const int32_t* slot,
                                               const int32_t* tile_valid, TensorView dx) {
  constexpr int kElems = Chunk<T>::kElems;
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= total) return;
  const int col = int(c % chunks) * kElems;
  int64_t rest = c / chunks;
  const int h = int(rest % heads);
  rest /= heads;
  const int s = int(rest % tokens), b = int(rest / tokens);
  const int row = slot[s];
  const void* src = element_at<T>(d_tiled, b, row, h, col);
  void* dst = element_at<T>(dx, b, s, h, col);
  if (d_mean == nullptr) {
    *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
    return;
  }
  const int t = row / kTileSlots;
  const float inv = 1.f / float(tile_valid[t]);  // a real slot's tile holds at least that token
  const float* m = d_mean + ((int64_t(b) * tiles + t) * heads + h) * (chunks * kElems) + col;
  Chunk<T> g;
  g.load(src);
#pragma unroll
  for (int j = 0; j < kElems; ++j) g.v[j] += m[j] * inv;
  g.store(dst);
}

Status check_view(const TensorView& v, int elem_bytes, const char* who) {
  VG_REQUIRE(v.data != nullptr, std::string(who) + ": a tensor pointer is null.");
  const int64_t vec = 16 / elem_bytes;
  VG_REQUIRE(reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && v.stride_b % vec == 0 &&
                 v.stride_s % vec == 0 && v.stride_h % vec == 0,
             std::string(who) + ": tensors must be 16-byte aligned with 16-byte aligned rows.");
  return Status::Ok;
}

}  // namespace

Status gather_rows(ElementType dtype, int batch, int rows_out, int heads, int head_dim,
                   TensorView in, TensorView out, const int32_t* index, void* stream) {
  const int eb = element_bytes(dtype);
  VG_REQUIRE(batch > 0 && rows_out > 0 && heads > 0 && head_dim > 0 && index != nullptr,
             "gather_rows: sizes must be positive and the index given.");
  VG_REQUIRE(head_dim * eb % 16 == 0, "gather_rows: a row of head_dim elements must be a "
                                      "multiple of 16 bytes.");
  Status st = check_view(in, eb, "gather_rows");
  if (st != Status::Ok) return st;
  st = check_view(out, eb, "gather_rows");
  if (st != Status::Ok) return st;
  const int chunks = head_dim * eb / 16;
  const int64_t total = int64_t(batch) * rows_out * heads * chunks;
  const int64_t blocks = (total + 255) / 256;
  gather_rows_kernel<<<dim3(unsigned(blocks)), 256, 0, static_cast<vgStream_t>(stream)>>>(
      total, rows_out, heads, chunks, in, out, index, eb);
  VG_CHECK_LAUNCH("gather_rows");
  return Status::Ok;
}

Status tile_with_mean(ElementType dtype, int batch, int tiles, int heads, int head_dim, TensorView in,
                      TensorView out, const int32_t* index, const int32_t* tile_valid, float* mean, void* stream) {
  const int eb = element_bytes(dtype);
  VG_REQUIRE(batch > 0 && tiles > 0 && heads > 0 && head_dim > 0 && batch <= 65535 && index != nullptr,
             "tile_with_mean: sizes must be positive (batch <= 65535) and the index given.");
  VG_REQUIRE(head_dim * eb % 16 == 0, "tile_with_mean: a row of head_dim elements must be a multiple of 16 bytes.");
  VG_REQUIRE(mean == nullptr || tile_valid != nullptr, "tile_with_mean: means need the tile sizes.");
  Status st = check_view(in, eb, "tile_with_mean");
  if (st != Status::Ok) return st;
  st = check_view(out, eb, "tile_with_mean");
  if (st != Status::Ok) return st;
  const int chunks = head_dim * eb / 16;
  const dim3 grid(unsigned(tiles), unsigned(batch), unsigned((heads * chunks + kMeanThreads - 1) / kMeanThreads));
  auto s = static_cast<vgStream_t>(stream);
  if (dtype == ElementType::BFloat16)
    tile_with_mean_kernel<Bf16><<<grid, kMeanThreads, 0, s>>>(tiles, heads, chunks, in, out, index, tile_valid, mean);
  else if (dtype == ElementType::Float16)
    tile_with_mean_kernel<Fp16><<<grid, kMeanThreads, 0, s>>>(tiles, heads, chunks, in, out, index, tile_valid, mean);
  else
    tile_with_mean_kernel<float><<<grid, kMeanThreads, 0, s>>>(tiles, heads, chunks, in, out, index, tile_valid, mean);
  VG_CHECK_LAUNCH("tile_with_mean");
  return Status::Ok;
}

Status tile_with_mean_backward(ElementType dtype, int batch, int tokens, int tiles, int heads, int head_dim,
                               TensorView d_tiled, const float* d_mean, const int32_t* slot,
                               const int32_t* tile_valid, TensorView dx, void* stream) {
  const int eb = element_bytes(dtype);
  VG_REQUIRE(batch > 0 && tokens > 0 && tiles > 0 && heads > 0 && head_dim > 0 && slot != nullptr,
             "tile_with_mean_backward: sizes must be positive and the slots given.");
  VG_REQUIRE(head_dim * eb % 16 == 0,
             "tile_with_mean_backward: a row of head_dim elements must be a multiple of 16 bytes.");
  VG_REQUIRE(d_mean == nullptr || tile_valid != nullptr, "tile_with_mean_backward: means need the tile sizes.");
  Status st = check_view(d_tiled, eb, "tile_with_mean_backward");
  if (st != Status::Ok) return st;
  st = check_view(dx, eb, "tile_with_mean_backward");
  if (st != Status::Ok) return st;
  const int chunks = head_dim * eb / 16;
  const int64_t total = int64_t(batch) * tokens * heads * chunks;
  const dim3 grid(unsigned((total + 255) / 256));
  auto s = static_cast<vgStream_t>(stream);
  if (dtype == ElementType::BFloat16)
    tile_with_mean_backward_kernel<Bf16><<<grid, 256, 0, s>>>(total, tokens, tiles, heads, chunks, d_tiled, d_mean,
                                                              slot, tile_valid, dx);
  else if (dtype == ElementType::Float16)
    tile_with_mean_backward_kernel<Fp16><<<grid, 256, 0, s>>>(total, tokens, tiles, heads, chunks, d_tiled, d_mean,
                                                              slot, tile_valid, dx);
  else
    tile_with_mean_backward_kernel<float><<<grid, 256, 0, s>>>(total, tokens, tiles, heads, chunks, d_tiled, d_mean,
                                                               slot, tile_valid, dx);
  VG_CHECK_LAUNCH("tile_with_mean_backward");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
