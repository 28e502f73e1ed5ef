// VSA tile kernels: row gather (tiling with pads / untiling), per-tile mean-pool (fp32 sums)
// and its gradient. Rows move as 16-byte chunks; D·element size must be a multiple of 16.
#include "../common/check.h"
#include "../common/numeric.h"
#include "../common/vendor.h"

#include <string>

namespace vidgraph::kernels {
namespace {

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

template <typename T>
VG_DEVICE float load_as_float(const void* base, int64_t off) {
  if constexpr (std::is_same<T, float>::value) {
    return static_cast<const float*>(base)[off];
  } else {
    return Numeric<T>::to_float(static_cast<const uint16_t*>(base)[off]);
  }
}

template <typename T>
VG_DEVICE void store_from_float(void* base, int64_t off, float v) {
  if constexpr (std::is_same<T, float>::value) {
    static_cast<float*>(base)[off] = v;
  } else {
    static_cast<uint16_t*>(base)[off] = Numeric<T>::from_float(v);
  }
}

template <typename T>
__global__ void mean_pool_kernel(int tiles, int heads, int head_dim, TensorView x,
                                 const int32_t* tile_valid, float* out) {
  const int t = blockIdx.x, b = blockIdx.y;
  const int n = tile_valid[t];
  const float inv = n > 0 ? 1.f / float(n) : 0.f;
  for (int e = threadIdx.x; e < heads * head_dim; e += blockDim.x) {
    const int h = e / head_dim, d = e % head_dim;
    float acc = 0.f;
    for (int r = 0; r < 64; ++r)
      acc += load_as_float<T>(x.data, b * x.stride_b + (int64_t(t) * 64 + r) * x.stride_s +
                                          h * x.stride_h + d);
    out[((int64_t(b) * tiles + t) * heads + h) * head_dim + d] = acc * inv;
  }
}

template <typename T>
__global__ void mean_pool_backward_kernel(int tiles, int heads, int head_dim, const float* grad,
                                          const int32_t* tile_valid, TensorView dx) {
  const int slot = blockIdx.x, b = blockIdx.y;
  const int t = slot / 64, r = slot % 64;
  const int n = tile_valid[t];
  const float inv = r < n ? 1.f / float(n) : 0.f;
  for (int e = threadIdx.x; e < heads * head_dim; e += blockDim.x) {
    const int h = e / head_dim, d = e % head_dim;
    const float g = grad[((int64_t(b) * tiles + t) * heads + h) * head_dim + d];
    store_from_float<T>(dx.data, b * dx.stride_b + int64_t(slot) * dx.stride_s + h * dx.stride_h + d,
                        g * inv);
  }
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

Status tile_mean_pool(ElementType dtype, int batch, int tiles, int heads, int head_dim,
                      TensorView x, const int32_t* tile_valid, float* out, void* stream) {
  VG_REQUIRE(batch > 0 && tiles > 0 && heads > 0 && head_dim > 0 && batch <= 65535,
             "tile_mean_pool: sizes must be positive (batch <= 65535).");
  VG_REQUIRE(x.data && tile_valid && out, "tile_mean_pool: a pointer is null.");
  const dim3 grid(tiles, batch);
  auto s = static_cast<vgStream_t>(stream);
  if (dtype == ElementType::BFloat16)
    mean_pool_kernel<Bf16><<<grid, 256, 0, s>>>(tiles, heads, head_dim, x, tile_valid, out);
  else if (dtype == ElementType::Float16)
    mean_pool_kernel<Fp16><<<grid, 256, 0, s>>>(tiles, heads, head_dim, x, tile_valid, out);
  else
    mean_pool_kernel<float><<<grid, 256, 0, s>>>(tiles, heads, head_dim, x, tile_valid, out);
  VG_CHECK_LAUNCH("tile_mean_pool");
  return Status::Ok;
}

Status tile_mean_pool_backward(ElementType dtype, int batch, int tiles, int heads, int head_dim,
                               const float* grad, const int32_t* tile_valid, TensorView dx,
                               void* stream) {
  VG_REQUIRE(batch > 0 && tiles > 0 && heads > 0 && head_dim > 0 && batch <= 65535,
             "tile_mean_pool_backward: sizes must be positive (batch <= 65535).");
  VG_REQUIRE(dx.data && tile_valid && grad, "tile_mean_pool_backward: a pointer is null.");
  const dim3 grid(tiles * 64, batch);
  auto s = static_cast<vgStream_t>(stream);
  if (dtype == ElementType::BFloat16)
    mean_pool_backward_kernel<Bf16><<<grid, 256, 0, s>>>(tiles, heads, head_dim, grad, tile_valid, dx);
  else if (dtype == ElementType::Float16)
    mean_pool_backward_kernel<Fp16><<<grid, 256, 0, s>>>(tiles, heads, head_dim, grad, tile_valid, dx);
  else
    mean_pool_backward_kernel<float><<<grid, 256, 0, s>>>(tiles, heads, head_dim, grad, tile_valid, dx);
  VG_CHECK_LAUNCH("tile_mean_pool_backward");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
