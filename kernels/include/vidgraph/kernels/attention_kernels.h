// Public launch boundary of the Vidgraph attention kernels (kernels/ layer): framework-free
// params structs and host launchers. No LibTorch, no Qt, no vendor runtime header: streams are
// passed as `void*` (a cudaStream_t or hipStream_t), pointers are device pointers.
//
// Layouts (DESIGN.md, Data contracts):
//  - Attention tensors are [B, S, H, D] views: element strides for B, S and H (int64), D
//    contiguous. Pointers 16-byte aligned, strides multiples of 8 elements. D is 64 or 128.
//  - Blocks are 64 tokens. Row block r of a sequence covers tokens [64r, 64r+64); the last one is
//    masked past the sequence end. kv_block_valid (optional, [ceil(seq_kv/64)] int32) further
//    limits key block j to its first kv_block_valid[j] keys (VSA pad slots).
//  - Block lists: index [B, H, n_row_blocks, max_len] int32, ascending per row, count
//    [B, H, n_row_blocks] int32 (count == nullptr: every row holds max_len entries).
//    index == nullptr means "every block" (dense, no index loads).
//  - LSE: fp32 [B, H, seq_q] contiguous, natural log of Σ exp(scale·qᵀk) over the listed keys;
//    −inf for a row with no key (its output row is 0).
// Every launcher checks its arguments, launches on `stream`, checks the launch, and returns a
// Status; on failure last_error() holds a sentence naming what failed. Nothing synchronises.
#pragma once

#include <cstdint>

namespace vidgraph::kernels {

enum class Status { Ok = 0, InvalidArgument, Unsupported, LaunchFailed };
enum class ElementType { BFloat16, Float16, Float32 };

// Speed knobs (never change results). Rows per architecture live in src/common/arch_config.h;
// a launcher given nullptr uses the row of the current device.
struct AttentionTuning {
  int fwd_stages;        // K/V shared-memory stages in the forward loop (1 or 2)
  int bwd_stages;        // Q/dO (dK/dV kernel) and K/V (dQ kernel) stages (1 or 2)
  bool kv_evict_first;   // streamed tiles marked evict-first in L2 (non-temporal on AMD)
  bool index_in_shared;  // stage a row block's list in shared memory before its loop
  bool fwd_q_in_shared;  // forward re-reads Q from shared memory; registers capped for 4 CTAs/SM
  bool bwd_q_in_shared;  // dQ kernel re-reads Q, dO from shared memory; capped for 3 CTAs/SM
  bool fwd_wgmma;        // NVIDIA sm_90 with sm_90a code: the wgmma forward (TMA loads, 3
                         // stages; fwd_stages/fwd_q_in_shared/kv_evict_first do not apply). The
                         // same bits as the mma.sync forward (H200). Elsewhere ignored.
  bool bwd_wgmma;        // the same for the backward: wgmma dQ and dK/dV kernels (TMA loads, 2
                         // stages; bwd_stages/bwd_q_in_shared/kv_evict_first do not apply).
};

struct TensorView {
  void* data = nullptr;
  int64_t stride_b = 0, stride_s = 0, stride_h = 0;
};

struct BlockLists {
  const int32_t* index = nullptr;
  const int32_t* count = nullptr;
  int max_len = 0;
};

struct FlashForwardParams {
  ElementType dtype = ElementType::BFloat16;
  int batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  float scale = 0.f;             // softmax scale, usually 1/sqrt(head_dim)
  TensorView q, k, v, o;         // q, o: [B, seq_q, H, D]; k, v: [B, seq_kv, H, D]
  float* lse = nullptr;          // [B, H, seq_q]
  BlockLists q2k;                // per query block: key blocks
  const int32_t* kv_block_valid = nullptr;
  const AttentionTuning* tuning = nullptr;
};

struct FlashBackwardParams {
  ElementType dtype = ElementType::BFloat16;
  int batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  float scale = 0.f;
  TensorView q, k, v, o, dout;   // as in the forward; dout like o
  const float* lse = nullptr;    // from the forward
  float* delta = nullptr;        // workspace [B, H, seq_q] fp32 (rowsum(dO∘O))
  TensorView dq, dk, dv;         // outputs, dtype of q; every row < seq written
  BlockLists q2k;                // per query block: key blocks (dQ kernel)
  BlockLists k2q;                // per key block: query blocks (dK/dV kernel); same set as q2k
  const int32_t* kv_block_valid = nullptr;
  const AttentionTuning* tuning = nullptr;
};

Status flash_forward(const FlashForwardParams& p, void* stream);
Status flash_backward(const FlashBackwardParams& p, void* stream);

// out[b, i, h, :] = index[i] >= 0 ? in[b, index[i], h, :] : 0 for i < rows_out. Untiling (tile order →
// token order) and plain tilings are this gather.
Status gather_rows(ElementType dtype, int batch, int rows_out, int heads, int head_dim,
                   TensorView in, TensorView out, const int32_t* index, void* stream);

// Tiling with per-tile means in one pass: out[b, i, h, :] = index[i] >= 0 ? in[b, index[i], h, :] : 0
// for i < tiles·64 and, when mean is not null, mean[b, t, h, :] = the fp32 sum of out's rows
// 64t..64t+63 / tile_valid[t] (0 → 0); mean: fp32 [B, tiles, H, D] contiguous.
Status tile_with_mean(ElementType dtype, int batch, int tiles, int heads, int head_dim, TensorView in,
                      TensorView out, const int32_t* index, const int32_t* tile_valid, float* mean, void* stream);
// Its gradient: dx[b, s, h, :] = d_tiled[b, slot[s], h, :] + d_mean[b, slot[s] / 64, h, :] /
// tile_valid[slot[s] / 64] for s < tokens (no second term when d_mean is null; fp32 sum, rounded once).
Status tile_with_mean_backward(ElementType dtype, int batch, int tokens, int tiles, int heads, int head_dim,
                               TensorView d_tiled, const float* d_mean, const int32_t* slot,
                               const int32_t* tile_valid, TensorView dx, void* stream);

// VSA's gated untiling: out[b, s, h, :] = fine[b, slot[s], h, :] + gate[b, s, h, :] ·
// coarse[b, slot[s] / 64, h, :] for s < tokens; gate_dim is head_dim or 1 (one gate value per row).
// fine: tiled [B, tiles·64, H, D]; coarse: one row per tile [B, tiles, H, D]; fp32 arithmetic.
Status untile_gated(ElementType dtype, int batch, int tokens, int heads, int head_dim, int gate_dim,
                    TensorView fine, TensorView gate, TensorView coarse, TensorView out, const int32_t* slot,
                    void* stream);
// Its gradient in one pass per tile (token[64t + r]: the token of slot r of tile t, -1 at pads):
// d_fine = grad gathered to the tiled order (pads 0), d_gate = grad · coarse (summed over the row
// when gate_dim is 1), d_coarse[b, t] = Σ over the tile's tokens of grad · gate (fp32, no atomics).
Status untile_gated_backward(ElementType dtype, int batch, int tiles, int heads, int head_dim, int gate_dim,
                             TensorView grad, TensorView gate, TensorView coarse, const int32_t* token,
                             TensorView d_fine, TensorView d_gate, TensorView d_coarse, void* stream);

// Per row of scores [rows, n] (fp32, row stride `ld`): the k largest entries (ties: lowest
// index first), written ascending to index [rows, k]; count[row] = k. 1 <= k <= n <= 16384.
Status topk_select(const float* scores, int64_t rows, int n, int64_t ld, int k, int32_t* index,
                   int32_t* count, void* stream);

// Transposes block lists: for `groups` (= B·H) groups of n_q rows over n_kv columns, writes for
// each column the ascending list of rows that contain it: k2q index [groups, n_kv, n_q], count
// [groups, n_kv], entries past the count set to -1. Deterministic; q2k rows must be ascending.
Status invert_block_lists(int64_t groups, int n_q, int n_kv, BlockLists q2k, int32_t* k2q_index,
                          int32_t* k2q_count, void* stream);

// The tuning row this build uses for the current device, or the override of the environment
// variable VIDGRAPH_ATTENTION_TUNING="fwd_stages,bwd_stages,evict_first,index_in_shared[,
// fwd_q_in_shared[,bwd_q_in_shared[,fwd_wgmma[,bwd_wgmma]]]]" (0/1 flags; absent flags are 0).
AttentionTuning default_tuning();

// The message of the last failed launcher call on this thread ("" if none).
const char* last_error();

}  // namespace vidgraph::kernels
