// Part 1 of the Hopper device check (hopper_check.cu): the wgmma tile layer alone — S = Q·Kᵀ and
// O = P·V from Sw128 tiles against a double reference on the host.
#pragma once

#include "common/wgmma.h"
#include "hopper_check_util.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace hopper_check {

namespace vk = vidgraph::kernels;

// Copies a row-major 64 x D tile into the Sw128 layout (wgmma.h) with ordinary stores; all 128
// threads take part. The caller fences the async proxy and takes a block barrier.
template <int D>
__device__ void store_tile_sw128(unsigned char* tile, const uint16_t* src) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < 64 * kChunks; c += blockDim.x) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    *reinterpret_cast<uint4*>(tile + vk::wgmma::sw128_offset(r, col)) =
        *reinterpret_cast<const uint4*>(src + r * D + col);
  }
}

template <int D, typename T>
__global__ void mma_qk_probe(const uint16_t* q, const uint16_t* k, float* s_out) {
  __shared__ __align__(1024) unsigned char tiles[2 * vk::wgmma::tile_bytes<D>()];
  store_tile_sw128<D>(tiles, q);
  store_tile_sw128<D>(tiles + vk::wgmma::tile_bytes<D>(), k);
  vk::wgmma::proxy_fence();
  __syncthreads();
  const uint32_t qa = vk::wgmma::smem_addr(tiles);
  const uint32_t ka = qa + vk::wgmma::tile_bytes<D>();
  vk::mma::FragC s[4];
  vk::wgmma::fence();
  for (int kk = 0; kk < D / 16; ++kk)
    vk::wgmma::mma_qk<T>(s, vk::wgmma::desc_k_major(qa, kk), vk::wgmma::desc_k_major(ka, kk),
                         kk > 0 ? 1 : 0);
  vk::wgmma::commit();
  vk::wgmma::wait<0>();
  vk::wgmma::fence_operands(s);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int n = 0; n < 4; ++n)
    for (int i = 0; i < vk::mma::kCElems; ++i)
      s_out[(warp * 16 + vk::mma::c_row(lane, i)) * 64 + n * 16 + vk::mma::c_col(lane, i)] =
          s[n].c[i];
}

template <int D, typename T>
__global__ void mma_pv_probe(const uint16_t* pm, const uint16_t* v, float* o_out) {
  __shared__ __align__(1024) unsigned char tile[vk::wgmma::tile_bytes<D>()];
  store_tile_sw128<D>(tile, v);
  vk::wgmma::proxy_fence();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  vk::mma::FragC s[4], o[D / 16];
  for (int n = 0; n < 4; ++n)
    for (int i = 0; i < vk::mma::kCElems; ++i)
      s[n].c[i] = vk::Numeric<T>::to_float(
          pm[(warp * 16 + vk::mma::c_row(lane, i)) * 64 + n * 16 + vk::mma::c_col(lane, i)]);
  for (int n = 0; n < D / 16; ++n) vk::mma::zero(o[n]);
  vk::mma::FragA a[4];
  for (int kk = 0; kk < 4; ++kk) vk::mma::c_to_a<T>(a[kk], s[kk], nullptr, lane);
  vk::wgmma::fence_operands(o);
  vk::wgmma::fence();
  for (int kk = 0; kk < 4; ++kk)
    vk::wgmma::mma_pv<T, D / 16>(o, a[kk], vk::wgmma::desc_mn_major(vk::wgmma::smem_addr(tile), kk));
  vk::wgmma::commit();
  vk::wgmma::wait<0>();
  vk::wgmma::fence_operands(o);
  for (int n = 0; n < D / 16; ++n)
    for (int i = 0; i < vk::mma::kCElems; ++i)
      o_out[(warp * 16 + vk::mma::c_row(lane, i)) * D + n * 16 + vk::mma::c_col(lane, i)] =
          o[n].c[i];
}

inline std::vector<uint16_t> random_bits(size_t n, bool bf16, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> h(n);
  for (auto& x : h) x = host_from_float(u(rng), bf16);
  return h;
}

// Compares got (rows x cols) to ref; prints the first mismatches. Returns max abs error / max |ref|.
inline double compare_tile(const char* what, const std::vector<float>& got,
                    const std::vector<double>& ref, int cols) {
  double max_err = 0, max_ref = 1e-30;
  int printed = 0;
  for (size_t i = 0; i < ref.size(); ++i) max_ref = std::max(max_ref, std::fabs(ref[i]));
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(double(got[i]) - ref[i]);
    if (!(e <= max_err)) max_err = std::isnan(e) ? INFINITY : e;
    if (!(e <= 1e-3 * max_ref) && printed < 6) {
      std::fprintf(stderr, "  %s (%zu, %zu): got %g want %g\n", what, i / cols, i % cols,
                   double(got[i]), ref[i]);
      ++printed;
    }
  }
  return max_err / max_ref;
}

template <int D, typename T>
double check_tile_layer(bool bf16, std::mt19937& rng, const char* name) {
  const auto q = random_bits(64 * D, bf16, rng), k = random_bits(64 * D, bf16, rng);
  const auto pm = random_bits(64 * 64, bf16, rng), v = random_bits(64 * D, bf16, rng);
  uint16_t *dq, *dk, *dp, *dv;
  float *ds, *dout;
  CHECK_CUDA(cudaMalloc(&dq, q.size() * 2));
  CHECK_CUDA(cudaMalloc(&dk, k.size() * 2));
  CHECK_CUDA(cudaMalloc(&dp, pm.size() * 2));
  CHECK_CUDA(cudaMalloc(&dv, v.size() * 2));
  CHECK_CUDA(cudaMalloc(&ds, 64 * 64 * 4));
  CHECK_CUDA(cudaMalloc(&dout, 64 * D * 4));
  CHECK_CUDA(cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dk, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dp, pm.data(), pm.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dv, v.data(), v.size() * 2, cudaMemcpyHostToDevice));
  mma_qk_probe<D, T><<<1, 128>>>(dq, dk, ds);
  mma_pv_probe<D, T><<<1, 128>>>(dp, dv, dout);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> s(64 * 64), o(64 * D);
  CHECK_CUDA(cudaMemcpy(s.data(), ds, s.size() * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(o.data(), dout, o.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<double> s_ref(64 * 64, 0.0), o_ref(64 * D, 0.0);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j)
      for (int d = 0; d < D; ++d)
        s_ref[i * 64 + j] +=
            double(host_to_float(q[i * D + d], bf16)) * host_to_float(k[j * D + d], bf16);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j)
      for (int d = 0; d < D; ++d)
        o_ref[i * D + d] +=
            double(host_to_float(pm[i * 64 + j], bf16)) * host_to_float(v[j * D + d], bf16);
  const std::string qk = std::string(name) + " QK^T", pv = std::string(name) + " PV";
  const double e1 = compare_tile(qk.c_str(), s, s_ref, 64);
  const double e2 = compare_tile(pv.c_str(), o, o_ref, D);
  std::fprintf(stderr, "tile layer %s: QK^T rel err %.2e, PV rel err %.2e\n", name, e1, e2);
  for (void* p : {(void*)dq, (void*)dk, (void*)dp, (void*)dv, (void*)ds, (void*)dout})
    CHECK_CUDA(cudaFree(p));
  return std::max(e1, e2);
}

}  // namespace hopper_check
