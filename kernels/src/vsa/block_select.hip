// VSA selection on the GPU, no host round trip:
//  - topk_select: per row, the k largest scores (ties → lowest index) as an ascending list. One
//    CTA per row; the row's keys (order-preserving uint32 of the fp32 scores) sit in shared
//    memory; a 32-step radix select finds the k-th key, then two block scans place the indices.
//  - invert_block_lists: per column block, the ascending list of row blocks that selected it
//    (binary search in each sorted row list; deterministic, no atomics), -1 padded to n_q.
#include "../common/check.h"
#include "../common/vendor.h"

#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kSelThreads = 256;
constexpr int kSelWarps = kSelThreads / kWarpSize;
constexpr int kMaxSelectN = 16384;

VG_DEVICE uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Sum over the CTA; every thread gets the result. `red` holds kSelWarps + 1 ints.
VG_DEVICE int block_sum(int v, int* red) {
  for (int m = 1; m < kWarpSize; m <<= 1) v += VG_SHFL_XOR(v, m);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int w = 0; w < kSelWarps; ++w) s += red[w];
    red[kSelWarps] = s;
  }
  __syncthreads();
  const int total = red[kSelWarps];
  __syncthreads();
  return total;
}

// Exclusive prefix over threads (thread order); `scan` holds kSelThreads ints.
VG_DEVICE int block_exclusive_scan(int v, int* scan) {
  scan[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int t = 0; t < kSelThreads; ++t) {
      const int x = scan[t];
      scan[t] = run;
      run += x;
    }
  }
  __syncthreads();
  const int r = scan[threadIdx.x];
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kSelThreads)
    topk_select_kernel(const float* scores, int n, int64_t ld, int k, int32_t* index,
                       int32_t* count) {
  extern __shared__ uint32_t keys[];
  __shared__ int red[kSelWarps + 1];
  __shared__ int scan[kSelThreads];
  const int64_t row = blockIdx.x;
  const float* src = scores + row * ld;
  for (int i = threadIdx.x; i < n; i += kSelThreads) keys[i] = order_key(src[i]);
  __syncthreads();

  const int chunk = (n + kSelThreads - 1) / kSelThreads;
  const int lo = threadIdx.x * chunk;
  const int hi = lo + chunk < n ? lo + chunk : n;

  uint32_t prefix = 0, mask = 0;
  int remaining = k;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t m2 = mask | (1u << bit), cand = prefix | (1u << bit);
    int local = 0;
    for (int i = lo; i < hi; ++i) local += (keys[i] & m2) == cand;
    const int c = block_sum(local, red);
    if (c >= remaining) {
      prefix = cand;
    } else {
      remaining -= c;
    }
    mask = m2;
  }
  // prefix = the k-th largest key; take `remaining` of its equals, lowest index first.
  int eq_local = 0;
  for (int i = lo; i < hi; ++i) eq_local += keys[i] == prefix;
  int eq_rank = block_exclusive_scan(eq_local, scan);
  int sel_local = 0;
  for (int i = lo, r = eq_rank; i < hi; ++i) {
    const bool eq = keys[i] == prefix;
    sel_local += keys[i] > prefix || (eq && r < remaining);
    r += eq;
  }
  int pos = block_exclusive_scan(sel_local, scan);
  int32_t* dst = index + row * k;
  for (int i = lo; i < hi; ++i) {
    const bool eq = keys[i] == prefix;
    if (keys[i] > prefix || (eq && eq_rank < remaining)) dst[pos++] = i;
    eq_rank += eq;
  }
  if (threadIdx.x == 0) count[row] = k;
}

__global__ void invert_lists_kernel(int64_t groups, int n_q, int n_kv, BlockLists q2k,
                                    int32_t* k2q_index, int32_t* k2q_count) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= groups * n_kv) return;
  const int64_t g = id / n_kv;
  const int j = int(id % n_kv);
  int32_t* out = k2q_index + id * n_q;
  int c = 0;
  for (int qb = 0; qb < n_q; ++qb) {
    const int64_t r = g * n_q + qb;
    const int32_t* list = q2k.index + r * q2k.max_len;
    int a = 0, b = q2k.count[r];
    while (a < b) {
      const int mid = (a + b) >> 1;
      if (list[mid] < j) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    if (a < q2k.count[r] && list[a] == j) out[c++] = qb;
  }
  k2q_count[id] = c;
  for (int i = c; i < n_q; ++i) out[i] = -1;
}

}  // namespace

Status topk_select(const float* scores, int64_t rows, int n, int64_t ld, int k, int32_t* index,
                   int32_t* count, void* stream) {
  VG_REQUIRE(scores && index && count, "topk_select: a pointer is null.");
  VG_REQUIRE(rows > 0 && rows <= 2147483647LL, "topk_select: rows must be in 1..2^31-1.");
  VG_REQUIRE(n >= 1 && n <= kMaxSelectN,
             "topk_select: row length " + std::to_string(n) + " is outside 1.." +
                 std::to_string(kMaxSelectN) + ".");
  VG_REQUIRE(k >= 1 && k <= n, "topk_select: k must be in 1..n.");
  VG_REQUIRE(ld >= n, "topk_select: the row stride must be at least the row length.");
  const size_t smem = size_t(n) * 4;
  if (smem > 48 * 1024 &&
      vgFuncSetAttribute(topk_select_kernel, vgFuncAttributeMaxDynamicSharedMemorySize,
                         int(smem)) != vgSuccess) {
    (void)vgGetLastError();
    return detail::set_error(Status::Unsupported,
                             "topk_select: rows of " + std::to_string(n) +
                                 " scores do not fit in this device's shared memory.");
  }
  topk_select_kernel<<<dim3(unsigned(rows)), kSelThreads, smem, static_cast<vgStream_t>(stream)>>>(
      scores, n, ld, k, index, count);
  VG_CHECK_LAUNCH("topk_select");
  return Status::Ok;
}

Status invert_block_lists(int64_t groups, int n_q, int n_kv, BlockLists q2k, int32_t* k2q_index,
                          int32_t* k2q_count, void* stream) {
  VG_REQUIRE(groups > 0 && n_q > 0 && n_kv > 0, "invert_block_lists: sizes must be positive.");
  VG_REQUIRE(q2k.index && q2k.count && k2q_index && k2q_count && q2k.max_len > 0,
             "invert_block_lists: a pointer is null.");
  const int64_t total = groups * n_kv;
  invert_lists_kernel<<<dim3(unsigned((total + 255) / 256)), 256, 0,
                        static_cast<vgStream_t>(stream)>>>(groups, n_q, n_kv, q2k, k2q_index,
                                                           k2q_count);
  VG_CHECK_LAUNCH("invert_block_lists");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
