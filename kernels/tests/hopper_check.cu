// Device check of the Hopper (sm_90a, wgmma) kernels; run on an H200 by tests/bench/hopper_check.sh.
// No LibTorch, no Qt. Four parts, in order:
//  1. The wgmma tile layer alone (a layout bug shows up here, apart from softmax bugs):
//     S = Q·Kᵀ (64x64, K = D) and O = P·V (64xD, K = 64) from Sw128 tiles against a double
//     reference on the host, bf16 and fp16, D 64 and 128.
//  2. The wgmma forward (flash::launch_forward_wgmma: the two-warpgroup kernel for dense cases,
//     the one-warpgroup kernel for cases with a block list) against flash_forward with
//     tuning.fwd_wgmma off (the mma.sync kernel, proven against the CPU reference by
//     tst_attention_gpu), over dtypes, D, B, H, ragged S, dense and listed blocks, sparsity, kv
//     masks, input scales and packed q/k/v views. A case passes when O and the LSE equal the
//     mma.sync forward's bit for bit (the same MMAs and softmax operations in the same order);
//     out rel-L2 and the LSE's max abs diff are reported beside. The output buffers are filled
//     with NaN first, so a kernel that skips a row fails.
//  3. The wgmma backward (flash_backward with bwd_wgmma on) against the mma.sync backward on the
//     same cases (lists inverted on the host): dQ, dK and dV bit for bit, NaN-filled first.
//  4. Timings at the Wan2.2-5B shape (B 1, H 24, S 27280, D 128, bf16; dense and sparsity 0.875):
//     forward and backward, mma.sync and wgmma, 3 warm-up runs, median of 20 (CUDA events).
// Prints one JSON object on stdout (logs on stderr); exits 1 on any mismatch, 2 when the device or
// binary cannot run the wgmma kernels. Options: --mma-only (part 1), --no-timing (parts 1-3).
#include "common/wgmma.h"
#include "hopper_check_util.h"
#include "hopper_tile_check.h"
#include "flash/flash_bwd_wgmma_kernels.h"
#include "flash/flash_forward_sm90.h"
#include "flash/flash_fwd_wgmma_kernel.h"
#include "flash/sm90_host.h"
#include "vidgraph/kernels/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace vk = vidgraph::kernels;

namespace {

using namespace hopper_check;

// ---- part 2: the forward, wgmma against mma.sync -------------------------------------------------
__global__ void fill_random(uint16_t* x, size_t n, uint32_t seed, float scale, bool bf16) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    const float f = (float(h >> 8) * (1.f / 16777216.f) * 2.f - 1.f) * scale;
    x[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(f)) : __half_as_ushort(__float2half_rn(f));
  }
}

struct Diff {
  double sq_diff, sq_ref;
  float lse_max;
  unsigned nan_or_inf_mismatch;
};

__global__ void diff_kernel(const uint16_t* a, const uint16_t* b, size_t n, const float* la,
                            const float* lb, size_t nl, bool bf16, Diff* out) {
  double sd = 0, sr = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = bf16 ? __bfloat162float(__ushort_as_bfloat16(a[i])) : __half2float(__ushort_as_half(a[i]));
    const float y = bf16 ? __bfloat162float(__ushort_as_bfloat16(b[i])) : __half2float(__ushort_as_half(b[i]));
    if (!isfinite(x)) atomicAdd(&out->nan_or_inf_mismatch, 1u);
    sd += double(x - y) * double(x - y);
    sr += double(y) * double(y);
  }
  atomicAdd(&out->sq_diff, sd);
  atomicAdd(&out->sq_ref, sr);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < nl;
       i += size_t(gridDim.x) * blockDim.x) {
    const float x = la[i], y = lb[i];
    float d;
    if (isinf(x) || isinf(y)) {
      d = (x == y) ? 0.f : 1e30f;
    } else {
      d = fabsf(x - y);
      if (!(d <= 1e30f)) d = 1e30f;  // NaN
    }
    atomicMax(reinterpret_cast<int*>(&out->lse_max), __float_as_int(d));
  }
}

struct Case {
  bool bf16;
  int d, batch, heads, seq;
  double sparsity;  // < 0: dense (no list)
  bool kv_valid;
  float scale;
  bool staged = true;      // tuning.index_in_shared
  bool empty_row = false;  // one row with an empty list
  bool packed = false;     // q, k, v: views of one [B, S, 3, H, D] buffer (strides 3·H·D)
};

struct Buffers {
  uint16_t *q = nullptr, *k = nullptr, *v = nullptr, *o_ref = nullptr, *o_wg = nullptr;
  float *lse_ref = nullptr, *lse_wg = nullptr;
  int32_t *index = nullptr, *count = nullptr, *kv_valid = nullptr;
  int32_t *k2q_index = nullptr, *k2q_count = nullptr;  // the lists inverted (backward)
  int k2q_max = 0;
  Diff* diff = nullptr;
  long long listed_blocks = 0;
  void release() {
    for (void* p : {(void*)q, (void*)k, (void*)v, (void*)o_ref, (void*)o_wg, (void*)lse_ref,
                    (void*)lse_wg, (void*)index, (void*)count, (void*)kv_valid, (void*)diff,
                    (void*)k2q_index, (void*)k2q_count})
      if (p != nullptr) CHECK_CUDA(cudaFree(p));
  }
};

std::string describe(const Case& c) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s D%d B%d H%d S%d %s%.3f kv_valid=%d scale=%g staged=%d%s%s",
                c.bf16 ? "bf16" : "fp16", c.d, c.batch, c.heads, c.seq,
                c.sparsity < 0 ? "dense " : "sparsity=", c.sparsity < 0 ? 0.0 : c.sparsity,
                int(c.kv_valid), c.scale, int(c.staged), c.empty_row ? " empty-row" : "",
                c.packed ? " packed-qkv" : "");
  return buf;
}

Buffers make_buffers(const Case& c, vk::FlashForwardParams& p, std::mt19937& rng) {
  Buffers bu;
  const size_t n = size_t(c.batch) * c.seq * c.heads * c.d;
  const size_t nl = size_t(c.batch) * c.heads * c.seq;
  if (c.packed) {
    CHECK_CUDA(cudaMalloc(&bu.q, 3 * n * 2));
  } else {
    CHECK_CUDA(cudaMalloc(&bu.q, n * 2));
    CHECK_CUDA(cudaMalloc(&bu.k, n * 2));
    CHECK_CUDA(cudaMalloc(&bu.v, n * 2));
  }
  for (uint16_t** x : {&bu.o_ref, &bu.o_wg}) CHECK_CUDA(cudaMalloc(x, n * 2));
  CHECK_CUDA(cudaMalloc(&bu.lse_ref, nl * 4));
  CHECK_CUDA(cudaMalloc(&bu.lse_wg, nl * 4));
  CHECK_CUDA(cudaMalloc(&bu.diff, sizeof(Diff)));
  const uint32_t seed = rng();
  if (c.packed) {
    fill_random<<<1024, 256>>>(bu.q, 3 * n, seed, c.scale, c.bf16);
  } else {
    fill_random<<<1024, 256>>>(bu.q, n, seed, c.scale, c.bf16);
    fill_random<<<1024, 256>>>(bu.k, n, seed ^ 0x1234567u, c.scale, c.bf16);
    fill_random<<<1024, 256>>>(bu.v, n, seed ^ 0x7654321u, 1.f, c.bf16);
  }
  CHECK_CUDA(cudaGetLastError());
  const int nb = (c.seq + 63) / 64;
  p = vk::FlashForwardParams{};
  p.dtype = c.bf16 ? vk::ElementType::BFloat16 : vk::ElementType::Float16;
  p.batch = c.batch;
  p.heads = c.heads;
  p.seq_q = p.seq_kv = c.seq;
  p.head_dim = c.d;
  p.scale = 1.f / std::sqrt(float(c.d));
  const int64_t hd = int64_t(c.heads) * c.d;
  const int64_t ss = c.packed ? 3 * hd : hd, sb = ss * c.seq;
  p.q = {bu.q, sb, ss, c.d};
  p.k = {c.packed ? bu.q + hd : bu.k, sb, ss, c.d};
  p.v = {c.packed ? bu.q + 2 * hd : bu.v, sb, ss, c.d};
  bu.listed_blocks = (long long)c.batch * c.heads * nb * nb;
  if (c.sparsity >= 0) {
    const int keep = std::max(1, int(std::lround(nb * (1.0 - c.sparsity))));
    const size_t rows = size_t(c.batch) * c.heads * nb;
    std::vector<int32_t> index(rows * keep, 0), count(rows);
    std::vector<int32_t> all(nb);
    bu.listed_blocks = 0;
    for (size_t r = 0; r < rows; ++r) {
      for (int j = 0; j < nb; ++j) all[j] = j;
      std::shuffle(all.begin(), all.end(), rng);
      int cnt = keep - ((keep > 1 && rng() % 3 == 0) ? 1 : 0);  // some shorter rows
      if (c.empty_row && r == rows / 2) cnt = 0;
      std::sort(all.begin(), all.begin() + cnt);
      std::copy(all.begin(), all.begin() + cnt, index.begin() + r * keep);
      count[r] = cnt;
      bu.listed_blocks += cnt;
    }
    // Key block → ascending query blocks (rows are visited in order).
    std::vector<int32_t> k2q(rows * nb, -1), k2q_count(rows, 0);
    for (size_t r = 0; r < rows; ++r) {
      const size_t group = r / nb;
      for (int j = 0; j < count[r]; ++j) {
        const size_t col = group * nb + index[r * keep + j];
        k2q[col * nb + k2q_count[col]++] = int32_t(r % nb);
      }
    }
    auto upload = [](int32_t** d, const std::vector<int32_t>& h) {
      CHECK_CUDA(cudaMalloc(d, h.size() * 4));
      CHECK_CUDA(cudaMemcpy(*d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
    };
    upload(&bu.index, index);
    upload(&bu.count, count);
    upload(&bu.k2q_index, k2q);
    upload(&bu.k2q_count, k2q_count);
    bu.k2q_max = nb;
    p.q2k = {bu.index, bu.count, keep};
  }
  if (c.kv_valid) {
    std::vector<int32_t> valid(nb);
    for (auto& x : valid) x = rng() % 4 == 0 ? int(rng() % 65) : 64;  // some pads, some empty
    CHECK_CUDA(cudaMalloc(&bu.kv_valid, nb * 4));
    CHECK_CUDA(cudaMemcpy(bu.kv_valid, valid.data(), nb * 4, cudaMemcpyHostToDevice));
    p.kv_block_valid = bu.kv_valid;
  }
  return bu;
}

// The JSON name of the kernel launch_forward_wgmma runs for a case (the names the H200 measured
// them under: tests/bench/results/NOTES.md).
const char* kernel_name(const Case& c) {
  return c.sparsity < 0 ? "dense2wg_ws" : "overlap3_ws";
}

// The kernels assume (and trap without) a 1024-byte aligned dynamic shared-memory base; this
// probe, declared like them, reports the base's offset from 1024 alignment.
__global__ void smem_base_probe(uint32_t* out) {
  extern __shared__ __align__(1024) unsigned char probe_smem[];
  if (threadIdx.x == 0) *out = vk::wgmma::smem_addr(probe_smem) & 1023u;
}
uint32_t smem_base_misalignment() {
  uint32_t* d = nullptr;
  uint32_t h = 0;
  const int bytes = 112 * 1024;
  CHECK_CUDA(cudaFuncSetAttribute(smem_base_probe, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  bytes));
  CHECK_CUDA(cudaMalloc(&d, 4));
  smem_base_probe<<<1, 128, bytes>>>(d);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(d));
  return h;
}

vk::AttentionTuning tuning(bool wgmma, bool staged) {
  return vk::AttentionTuning{1, 1, false, staged, true, true, wgmma, false};
}
// The backward's row: mma.sync or wgmma kernels (the forward knob is irrelevant there).
vk::AttentionTuning backward_tuning(bool wgmma, bool staged) {
  return vk::AttentionTuning{1, 1, false, staged, true, true, false, wgmma};
}

// wgmma false: flash_forward with fwd_wgmma off (the mma.sync kernel); true: the wgmma launcher
// itself (no silent fallback to mma.sync).
bool run_forward(vk::FlashForwardParams p, bool staged, bool wgmma, uint16_t* o, float* lse,
                 cudaStream_t s) {
  const vk::AttentionTuning t = tuning(wgmma, staged);
  const int64_t hd = int64_t(p.heads) * p.head_dim;
  p.o = {o, hd * p.seq_q, hd, p.head_dim};  // contiguous [B, S, H, D]
  p.lse = lse;
  p.tuning = &t;
  const vk::Status st =
      wgmma ? vk::flash::launch_forward_wgmma(p, t, s) : vk::flash_forward(p, s);
  if (st != vk::Status::Ok) {
    std::fprintf(stderr, "forward (%s) failed: %s\n", wgmma ? "wgmma" : "mma.sync",
                 vk::last_error());
    return false;
  }
  return true;
}

template <typename E>
std::vector<E> to_host(const E* d, size_t n) {
  std::vector<E> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(E), cudaMemcpyDeviceToHost));
  return h;
}

// Returns true when the wgmma forward gives the mma.sync forward's bits; appends one JSON row.
bool check_case(const Case& c, std::mt19937& rng, std::string& rows) {
  vk::FlashForwardParams p;
  Buffers bu = make_buffers(c, p, rng);
  const size_t n = size_t(c.batch) * c.seq * c.heads * c.d;
  const size_t nl = size_t(c.batch) * c.heads * c.seq;
  CHECK_CUDA(cudaMemset(bu.o_wg, 0xFF, n * 2));  // NaN: an unwritten row fails
  CHECK_CUDA(cudaMemset(bu.lse_wg, 0xFF, nl * 4));
  bool ok = run_forward(p, c.staged, false, bu.o_ref, bu.lse_ref, nullptr) &&
            run_forward(p, c.staged, true, bu.o_wg, bu.lse_wg, nullptr);
  Diff h{};
  bool same_bits = false;
  if (ok) {
    CHECK_CUDA(cudaMemset(bu.diff, 0, sizeof(Diff)));
    diff_kernel<<<512, 256>>>(bu.o_wg, bu.o_ref, n, bu.lse_wg, bu.lse_ref, nl, c.bf16, bu.diff);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(&h, bu.diff, sizeof(Diff), cudaMemcpyDeviceToHost));
    same_bits = to_host(bu.o_wg, n) == to_host(bu.o_ref, n) &&
                std::memcmp(to_host(bu.lse_wg, nl).data(), to_host(bu.lse_ref, nl).data(),
                            nl * 4) == 0;
  }
  const double rel = std::sqrt(h.sq_diff / std::max(h.sq_ref, 1e-30));
  ok = ok && same_bits && h.nan_or_inf_mismatch == 0;
  const char* name = kernel_name(c);
  std::fprintf(stderr, "%s %s [%s]: out rel-L2 %.3e, lse max diff %.3e, non-finite %u%s\n",
               ok ? "PASS" : "FAIL", describe(c).c_str(), name, rel, double(h.lse_max),
               h.nan_or_inf_mismatch, same_bits ? "" : " (bits differ from mma.sync)");
  char buf[500];
  std::snprintf(buf, sizeof buf,
                "%s{\"case\": \"%s\", \"kernel\": \"%s\", \"out_rel_l2\": %.4e, "
                "\"lse_max_abs\": %.4e, \"bits_equal_mma_sync\": %s, \"pass\": %s}",
                rows.empty() ? "" : ", ", describe(c).c_str(), name, rel, double(h.lse_max),
                same_bits ? "true" : "false", ok ? "true" : "false");
  rows += buf;
  bu.release();
  return ok;
}

// ---- part 3: the backward, wgmma against mma.sync ---------------------------------------------
// Per case: the mma.sync forward gives O and the LSE, dO is random, and flash_backward runs with
// bwd_wgmma off and on. Passes when dQ, dK and dV equal bit for bit (outputs NaN-filled first).
struct Backward {
  vk::FlashBackwardParams p;
  uint16_t* dout = nullptr;
  uint16_t* grads[2][3] = {};  // [mma.sync, wgmma][dq, dk, dv]
  float* delta = nullptr;
  size_t n = 0;
  void release() {
    for (void* x : {(void*)dout, (void*)delta}) CHECK_CUDA(cudaFree(x));
    for (auto& g : grads)
      for (uint16_t* x : g) CHECK_CUDA(cudaFree(x));
  }
};

Backward make_backward(const Case& c, const vk::FlashForwardParams& f, const Buffers& bu,
                       std::mt19937& rng) {
  Backward w;
  w.n = size_t(c.batch) * c.seq * c.heads * c.d;
  CHECK_CUDA(cudaMalloc(&w.dout, w.n * 2));
  fill_random<<<1024, 256>>>(w.dout, w.n, rng(), 1.f, c.bf16);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMalloc(&w.delta, size_t(c.batch) * c.heads * c.seq * 4));
  for (auto& g : w.grads)
    for (uint16_t*& x : g) {
      CHECK_CUDA(cudaMalloc(&x, w.n * 2));
      CHECK_CUDA(cudaMemset(x, 0xFF, w.n * 2));  // NaN: an unwritten row fails
    }
  const int64_t hd = int64_t(c.heads) * c.d;
  const vk::TensorView dense{nullptr, hd * c.seq, hd, c.d};
  vk::FlashBackwardParams& p = w.p;
  p.dtype = f.dtype;
  p.batch = f.batch;
  p.heads = f.heads;
  p.seq_q = f.seq_q;
  p.seq_kv = f.seq_kv;
  p.head_dim = f.head_dim;
  p.scale = f.scale;
  p.q = f.q;
  p.k = f.k;
  p.v = f.v;
  p.o = {bu.o_ref, dense.stride_b, dense.stride_s, dense.stride_h};
  p.dout = {w.dout, dense.stride_b, dense.stride_s, dense.stride_h};
  p.lse = bu.lse_ref;
  p.delta = w.delta;
  p.q2k = f.q2k;
  p.k2q = {bu.k2q_index, bu.k2q_count, bu.k2q_max};
  p.kv_block_valid = f.kv_block_valid;
  return w;
}

bool run_backward(Backward& w, bool staged, bool wgmma) {
  const vk::AttentionTuning t = backward_tuning(wgmma, staged);
  vk::FlashBackwardParams p = w.p;
  uint16_t* const* g = w.grads[wgmma ? 1 : 0];
  p.dq = {g[0], p.dout.stride_b, p.dout.stride_s, p.dout.stride_h};
  p.dk = {g[1], p.dout.stride_b, p.dout.stride_s, p.dout.stride_h};
  p.dv = {g[2], p.dout.stride_b, p.dout.stride_s, p.dout.stride_h};
  p.tuning = &t;
  if (vk::flash_backward(p, nullptr) != vk::Status::Ok) {
    std::fprintf(stderr, "backward (%s) failed: %s\n", wgmma ? "wgmma" : "mma.sync",
                 vk::last_error());
    return false;
  }
  return true;
}

bool check_backward_case(const Case& c, std::mt19937& rng, std::string& rows) {
  vk::FlashForwardParams f;
  Buffers bu = make_buffers(c, f, rng);
  bool ok = run_forward(f, c.staged, false, bu.o_ref, bu.lse_ref, nullptr);
  Backward w = make_backward(c, f, bu, rng);
  ok = ok && run_backward(w, c.staged, false) && run_backward(w, c.staged, true);
  const char* names[3] = {"dq", "dk", "dv"};
  bool same_bits = ok;
  double worst = 0;
  unsigned non_finite = 0;
  for (int i = 0; ok && i < 3; ++i) {
    Diff h{};
    CHECK_CUDA(cudaMemset(bu.diff, 0, sizeof(Diff)));
    diff_kernel<<<512, 256>>>(w.grads[1][i], w.grads[0][i], w.n, nullptr, nullptr, 0, c.bf16,
                              bu.diff);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpy(&h, bu.diff, sizeof(Diff), cudaMemcpyDeviceToHost));
    const double rel = std::sqrt(h.sq_diff / std::max(h.sq_ref, 1e-30));
    worst = std::max(worst, rel);
    non_finite += h.nan_or_inf_mismatch;
    const bool same = to_host(w.grads[1][i], w.n) == to_host(w.grads[0][i], w.n);
    if (!same) std::fprintf(stderr, "  %s differs from mma.sync: rel-L2 %.3e\n", names[i], rel);
    same_bits = same_bits && same;
  }
  ok = ok && same_bits && non_finite == 0;
  std::fprintf(stderr, "%s backward %s: grads rel-L2 %.3e, non-finite %u%s\n",
               ok ? "PASS" : "FAIL", describe(c).c_str(), worst, non_finite,
               same_bits ? "" : " (bits differ from mma.sync)");
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s{\"case\": \"%s\", \"grads_rel_l2\": %.4e, \"bits_equal_mma_sync\": %s, "
                "\"pass\": %s}",
                rows.empty() ? "" : ", ", describe(c).c_str(), worst,
                same_bits ? "true" : "false", ok ? "true" : "false");
  rows += buf;
  w.release();
  bu.release();
  return ok;
}

// ---- part 4: timings ---------------------------------------------------------------------------
template <typename Run>
float median_of_20(Run run) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) run();
  std::vector<float> ms(20);
  for (auto& x : ms) {
    CHECK_CUDA(cudaEventRecord(a));
    run();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    CHECK_CUDA(cudaEventElapsedTime(&x, a, b));
  }
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return 0.5f * (ms[9] + ms[10]);
}

// The backward (delta pre-pass, dQ, dK/dV) with mma.sync and with wgmma; FLOPs 2.5x the forward's.
std::string time_backward_case(const Case& c, std::mt19937& rng) {
  vk::FlashForwardParams f;
  Buffers bu = make_buffers(c, f, rng);
  run_forward(f, true, false, bu.o_ref, bu.lse_ref, nullptr);
  Backward w = make_backward(c, f, bu, rng);
  const double flops = 2.5 * 4.0 * 64 * 64 * c.d * double(bu.listed_blocks);
  const float ref = median_of_20([&] { run_backward(w, true, false); });
  const float ms = median_of_20([&] { run_backward(w, true, true); });
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "{\"case\": \"backward %s\", \"mma_sync_ms\": %.3f, \"mma_sync_tflops\": %.1f, "
                "\"wgmma_ms\": %.3f, \"wgmma_tflops\": %.1f, \"speedup_vs_mma_sync\": %.3f}",
                describe(c).c_str(), ref, flops / (ref * 1e9), ms, flops / (ms * 1e9), ref / ms);
  std::fprintf(stderr, "timing backward %s: mma.sync %.3f ms (%.1f TF/s), wgmma %.3f ms "
               "(%.1f TF/s, x%.2f)\n", describe(c).c_str(), ref, flops / (ref * 1e9), ms,
               flops / (ms * 1e9), ref / ms);
  w.release();
  bu.release();
  return buf;
}

std::string time_case(const Case& c, std::mt19937& rng) {
  vk::FlashForwardParams p;
  Buffers bu = make_buffers(c, p, rng);
  // FLOPs of the listed 64x64 blocks (dense: all of them): 4 · 64 · 64 · D per block.
  const double flops = 4.0 * 64 * 64 * c.d * double(bu.listed_blocks);
  const float ref = median_of_20([&] { run_forward(p, true, false, bu.o_ref, bu.lse_ref, nullptr); });
  const float ms = median_of_20([&] { run_forward(p, true, true, bu.o_wg, bu.lse_wg, nullptr); });
  const char* name = kernel_name(c);
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "{\"case\": \"%s\", \"kernel\": \"%s\", \"mma_sync_ms\": %.3f, "
                "\"mma_sync_tflops\": %.1f, \"wgmma_ms\": %.3f, \"wgmma_tflops\": %.1f, "
                "\"speedup_vs_mma_sync\": %.3f}",
                describe(c).c_str(), name, ref, flops / (ref * 1e9), ms, flops / (ms * 1e9),
                ref / ms);
  std::fprintf(stderr, "timing %s [mma.sync]: %.3f ms, %.1f TF/s\n", describe(c).c_str(), ref,
               flops / (ref * 1e9));
  std::fprintf(stderr, "timing %s [%s]: %.3f ms, %.1f TF/s (x%.2f vs mma.sync)\n",
               describe(c).c_str(), name, ms, flops / (ms * 1e9), ref / ms);
  bu.release();
  return buf;
}

}  // namespace

// CTAs per SM of each Hopper kernel at D 128 bf16 with its shared memory (lists of the Wan2.2-5B
// shape staged). The H200 gives 1, 1, 2, 2: it allocates registers per warpgroup, so the listed
// forward's producer warp costs a warpgroup's worth and its 160-thread CTA runs one per SM (two
// warpgroups with a list each per CTA measured slower: tests/bench/results/NOTES.md).
std::string occupancy_json() {
  using namespace vk::flash;
  auto ctas = [](auto kernel, int threads, size_t smem) {
    CHECK_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int n = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem));
    return n;
  };
  const int list = 427;
  char buf[400];
  std::snprintf(
      buf, sizeof buf,
      "{\"fwd_dense\": %d, \"fwd_listed\": %d, \"bwd_dq\": %d, \"bwd_dkdv\": %d}",
      ctas(flash_fwd_wgmma_kernel<128, vk::Bf16, 2>, wgmma_fwd_threads<2>(),
           wgmma_fwd_smem_bytes<128, 2>(0)),
      ctas(flash_fwd_wgmma_kernel<128, vk::Bf16, 1>, wgmma_fwd_threads<1>(),
           wgmma_fwd_smem_bytes<128, 1>(list)),
      ctas(flash_bwd_dq_wgmma_kernel<128, vk::Bf16>, kThreads, wgmma_dq_smem_bytes<128>(list)),
      ctas(flash_bwd_dkdv_wgmma_kernel<128, vk::Bf16>, kThreads, wgmma_dkdv_smem_bytes<128>(list)));
  std::fprintf(stderr, "occupancy (CTAs per SM, D128 bf16): %s\n", buf);
  return buf;
}

int main(int argc, char** argv) {
  bool mma_only = false, timing = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mma-only") == 0) {
      mma_only = true;
    } else if (std::strcmp(argv[i], "--no-timing") == 0) {
      timing = false;
    } else {
      std::fprintf(stderr, "usage: %s [--mma-only] [--no-timing]\n", argv[0]);
      return 2;
    }
  }
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::fprintf(stderr, "device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  std::string why;
  if (!vk::flash::hopper_kernels_available(&why)) {
    std::printf("{\"error\": \"the wgmma kernels cannot run here: %s\", \"device\": \"%s\"}\n",
                why.c_str(), prop.name);
    return 2;
  }
  const uint32_t misaligned = smem_base_misalignment();
  if (misaligned != 0)  // the forward kernels would trap: check the tile layer only
    std::fprintf(stderr, "FAIL dynamic shared memory base is %u bytes off 1024 alignment; the "
                 "forward is not run\n", misaligned);
  std::mt19937 rng(20261129u);
  bool ok = misaligned == 0;
  const double tile_err = std::max({check_tile_layer<128, vk::Bf16>(true, rng, "bf16 D128"),
                                    check_tile_layer<128, vk::Fp16>(false, rng, "fp16 D128"),
                                    check_tile_layer<64, vk::Bf16>(true, rng, "bf16 D64"),
                                    check_tile_layer<64, vk::Fp16>(false, rng, "fp16 D64")});
  const bool tile_ok = tile_err < 1e-3;
  ok = ok && tile_ok;
  std::string rows, bwd_rows, times;
  if (!mma_only && misaligned == 0) {
    // {bf16, D, B, H, S, sparsity (< 0: dense), kv_valid, scale, staged, empty_row, packed}
    const Case cases[] = {
        {true, 128, 2, 3, 130, -1, false, 1.f},
        {false, 128, 1, 4, 1000, 0.5, true, 4.f},
        {true, 128, 2, 2, 1000, 0.875, true, 16.f},
        {true, 128, 1, 3, 1000, 0.95, false, 4.f, true, true},
        {true, 128, 1, 2, 1000, 0.5, true, 1.f, false},
        {false, 128, 2, 2, 130, 0.0, false, 16.f},
        {true, 64, 2, 3, 130, -1, true, 1.f},
        {false, 64, 1, 5, 1000, 0.875, true, 4.f},
        {true, 64, 1, 2, 1000, 0.0, false, 16.f},
        {false, 64, 2, 2, 1000, 0.95, true, 1.f, true, true},
        {true, 128, 1, 24, 27280, -1, false, 1.f},
        {true, 128, 1, 24, 27280, 0.875, false, 4.f},
        {false, 128, 1, 2, 27280, 0.5, true, 16.f},
        {true, 64, 2, 2, 27280, 0.95, true, 4.f},
        {false, 128, 1, 4, 1000, -1, true, 4.f},
        {true, 64, 1, 2, 27280, -1, false, 4.f},
        {true, 128, 2, 3, 1000, -1, false, 1.f, true, false, true},
        {false, 128, 1, 4, 1000, 0.875, true, 4.f, true, false, true},
        {false, 64, 2, 3, 1000, -1, true, 16.f},  // dense fp16 D64: every instance is run
    };
    for (const Case& c : cases) ok = check_case(c, rng, rows) && ok;
    for (const Case& c : cases) ok = check_backward_case(c, rng, bwd_rows) && ok;
    if (timing) {
      // The Wan2.2-5B shape, and 480 full tiles (equal work with the peers of kernels_run.sh).
      for (const Case& c : {Case{true, 128, 1, 24, 27280, -1, false, 1.f},
                            Case{true, 128, 1, 24, 27280, 0.875, false, 1.f},
                            Case{true, 128, 1, 24, 30720, 0.875, false, 1.f}}) {
        times += (times.empty() ? "" : ", ") + time_case(c, rng);
        times += ", " + time_backward_case(c, rng);
      }
    }
  }
  const std::string occupancy = occupancy_json();
  std::printf("{\"device\": \"%s\", \"pass\": %s, \"smem_base_misalignment\": %u, "
              "\"tile_layer_rel_err\": %.3e, \"tile_layer_pass\": %s, \"cases\": [%s], "
              "\"backward_cases\": [%s], \"timings\": [%s], \"ctas_per_sm\": %s}\n",
              prop.name, ok ? "true" : "false", misaligned, tile_err, tile_ok ? "true" : "false",
              rows.c_str(), bwd_rows.c_str(), times.c_str(), occupancy.c_str());
  return ok ? 0 : 1;
}
