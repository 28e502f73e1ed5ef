// VSA selection on the GPU, no host round trip:
//  - topk_select: per row, the k largest scores (ties → lowest index) as an ascending list. One
//    warp per row (several rows per CTA), the row's keys (order-preserving uint32 of the fp32
//    scores) in shared memory; a 32-step radix select finds the k-th key with warp sums, then one
//    in-order pass of ballots writes the indices ascending.
//  - invert_block_lists: per column block, the ascending list of row blocks that selected it, -1
//    padded to n_q. A CTA takes one group and 64 columns: it marks a bitmap [n_q rows x 64
//    columns] in shared memory from every row's list (OR: order-free, so deterministic), then one
//    warp per column walks the rows in order with ballots.
#include "../common/check.h"
#include "../common/vendor.h"

#include <string>

namespace vidgraph::kernels {
namespace {

constexpr int kMaxSelectN = 16384;
constexpr int kSelectThreads = 256;
constexpr int kSelectWarps = kSelectThreads / kWarpSize;
constexpr int kInvertCols = 64;  // columns per CTA: two 32-bit words of the bitmap per row
constexpr int kInvertThreads = 256;

VG_DEVICE uint32_t order_key(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

VG_DEVICE int warp_sum(int v) {
  for (int m = 1; m < kWarpSize; m <<= 1) v += VG_SHFL_XOR(v, m);
  return v;
}

VG_DEVICE uint64_t lanes_below(int lane) { return (uint64_t(1) << lane) - 1; }

// rows_per_cta warps each take one row; keys: rows_per_cta x n uint32 in shared memory.
__global__ void __launch_bounds__(kSelectThreads)
    topk_select_kernel(const float* scores, int64_t rows, int n, int64_t ld, int k,
                       int rows_per_cta, int32_t* index, int32_t* count) {
  extern __shared__ uint32_t select_keys[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t row = int64_t(blockIdx.x) * rows_per_cta + warp;
  if (warp >= rows_per_cta || row >= rows) return;  // whole warps leave; no block barrier below
  uint32_t* keys = select_keys + size_t(warp) * n;
  const float* src = scores + row * ld;
  for (int i = lane; i < n; i += kWarpSize) keys[i] = order_key(src[i]);
  VG_SYNC_WARP();

  // The k-th largest key, bit by bit; `remaining` = how many of its equals belong to the top k.
  uint32_t prefix = 0, mask = 0;
  int remaining = k;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t m2 = mask | (1u << bit), cand = prefix | (1u << bit);
    int local = 0;
    for (int i = lane; i < n; i += kWarpSize) local += (keys[i] & m2) == cand;
    const int c = warp_sum(local);
    if (c >= remaining) {
      prefix = cand;
    } else {
      remaining -= c;
    }
    mask = m2;
  }

  // In index order: everything above the k-th key, and its first `remaining` equals.
  int32_t* dst = index + row * k;
  int written = 0, equals_seen = 0;
  for (int base = 0; base < n; base += kWarpSize) {
    const int i = base + lane;
    const uint32_t key = i < n ? keys[i] : 0u;
    const bool eq = i < n && key == prefix;
    const uint64_t eq_mask = VG_BALLOT(eq);
    const int eq_before = equals_seen + __popcll(eq_mask & lanes_below(lane));
    const bool take = i < n && (key > prefix || (eq && eq_before < remaining));
    const uint64_t take_mask = VG_BALLOT(take);
    if (take) dst[written + __popcll(take_mask & lanes_below(lane))] = i;
    written += __popcll(take_mask);
    equals_seen += __popcll(eq_mask);
  }
  if (lane == 0) count[row] = k;
}

// blockIdx.x = group · column_chunks + chunk; bitmap: n_q x 2 words in shared memory.
__global__ void __launch_bounds__(kInvertThreads)
    invert_lists_kernel(int n_q, int n_kv, int chunks, BlockLists q2k, int32_t* k2q_index,
                        int32_t* k2q_count) {
  extern __shared__ uint32_t selected_bits[];
  const int64_t g = blockIdx.x / chunks;
  const int c0 = (blockIdx.x % chunks) * kInvertCols;
  for (int i = threadIdx.x; i < n_q * 2; i += kInvertThreads) selected_bits[i] = 0;
  __syncthreads();
  const int len = q2k.max_len;
  for (int64_t e = threadIdx.x; e < int64_t(n_q) * len; e += kInvertThreads) {
    const int r = int(e / len), j = int(e % len);
    const int64_t row = g * n_q + r;
    if (j >= (q2k.count != nullptr ? q2k.count[row] : len)) continue;
    const int col = q2k.index[row * len + j] - c0;
    if (col >= 0 && col < kInvertCols) atomicOr(&selected_bits[r * 2 + (col >> 5)], 1u << (col & 31));
  }
  __syncthreads();

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  constexpr int kWarps = kInvertThreads / kWarpSize;
  for (int c = warp; c < kInvertCols && c0 + c < n_kv; c += kWarps) {
    const int64_t col = g * n_kv + c0 + c;
    int32_t* out = k2q_index + col * n_q;
    int found = 0;
    for (int base = 0; base < n_q; base += kWarpSize) {
      const int r = base + lane;
      const bool hit = r < n_q && ((selected_bits[r * 2 + (c >> 5)] >> (c & 31)) & 1u);
      const uint64_t hits = VG_BALLOT(hit);
      if (hit) out[found + __popcll(hits & lanes_below(lane))] = r;
      found += __popcll(hits);
    }
    for (int i = found + lane; i < n_q; i += kWarpSize) out[i] = -1;
    if (lane == 0) k2q_count[col] = found;
  }
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
  // As many rows (warps) per CTA as fit in 48 KiB of keys, at least one.
  int rows_per_cta = int((48 * 1024) / (size_t(n) * 4));
  rows_per_cta = rows_per_cta < 1 ? 1 : (rows_per_cta > kSelectWarps ? kSelectWarps : rows_per_cta);
  const size_t smem = size_t(rows_per_cta) * n * 4;
  if (smem > 48 * 1024) {
    const Status st = detail::allow_shared_memory(topk_select_kernel, smem, "topk_select",
                                                  "Rows this long need a device with more.");
    if (st != Status::Ok) return st;
  }
  const int64_t ctas = (rows + rows_per_cta - 1) / rows_per_cta;
  topk_select_kernel<<<dim3(unsigned(ctas)), kSelectThreads, smem,
                       static_cast<vgStream_t>(stream)>>>(scores, rows, n, ld, k, rows_per_cta,
                                                          index, count);
  VG_CHECK_LAUNCH("topk_select");
  return Status::Ok;
}

Status invert_block_lists(int64_t groups, int n_q, int n_kv, BlockLists q2k, int32_t* k2q_index,
                          int32_t* k2q_count, void* stream) {
  VG_REQUIRE(groups > 0 && n_q > 0 && n_kv > 0, "invert_block_lists: sizes must be positive.");
  VG_REQUIRE(n_q <= kMaxSelectN, "invert_block_lists: " + std::to_string(n_q) +
                                     " row blocks are more than " + std::to_string(kMaxSelectN) +
                                     ".");
  VG_REQUIRE(q2k.index && k2q_index && k2q_count && q2k.max_len > 0,
             "invert_block_lists: a pointer is null.");
  const int chunks = (n_kv + kInvertCols - 1) / kInvertCols;
  VG_REQUIRE(groups * chunks <= 2147483647LL, "invert_block_lists: too many groups.");
  const size_t smem = size_t(n_q) * 2 * 4;
  if (smem > 48 * 1024) {
    const Status st = detail::allow_shared_memory(invert_lists_kernel, smem, "invert_block_lists");
    if (st != Status::Ok) return st;
  }
  invert_lists_kernel<<<dim3(unsigned(groups * chunks)), kInvertThreads, smem,
                        static_cast<vgStream_t>(stream)>>>(n_q, n_kv, chunks, q2k, k2q_index,
                                                           k2q_count);
  VG_CHECK_LAUNCH("invert_block_lists");
  return Status::Ok;
}

}  // namespace vidgraph::kernels
