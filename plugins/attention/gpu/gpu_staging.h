// The GPU path's staging around the block-sparse kernels (device_path.h hooks), each an autograd-
// capable operation on LibTorch's current stream with no host synchronisation:
//  - tile_with_mean: x [B, S, H, D] (any 16-byte-aligned strides) -> [B, H, Sp, D] contiguous, pads
//                    zero, and (with_mean) the per-tile means fp32 [B, H, N, D] (a view of [B, N, H, D])
//                    summed in fp32 in the same pass; backward: one pass back to token order adding
//                    each tile's mean gradient / its size (without means: the inverse gather).
//  - untile_gated:   fine [B, H, Sp, D] -> [B, S, H, D]; with a gate, fine + coarse[tile] * gate is
//                    formed in the tiled layout (one fused multiply-add over a broadcast of the coarse
//                    tile outputs, no [B, H, S, D] fp32 intermediate) and untiled by one gather.
//                    Gradients: fine and the gate by gathers, the coarse outputs by an fp32-accumulated
//                    sum over each tile's slots (deterministic: no atomics).
//  - add_linear_branch: out + proj_l(o_lin) with feature maps in the input dtype and cuBLAS GEMMs
//                    (fp32 accumulation) on strided [B, H, S, D] views of the inputs: no fp32 copies of
//                    q, k, v and, for B = 1, no permute copies. proj_l is folded into the D x D state
//                    ((phi(q) kv) W^T = phi(q) (kv W^T)) and the division into the final add (addcdiv).
//                    (GpuPath sends fp16 inputs longer than 32768 tokens to the fp32 default: range.)
// Dtypes: bf16/fp16 (fp32 also works); D a multiple of 16 bytes. Differentiable in every tensor input.
// GPU builds only (VIDGRAPH_ATTENTION_GPU).
#pragma once

#include "plugins/attention/device_path.h"
#include "plugins/attention/tile_layout.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace vidgraph::attention::gpu {

TiledTokens tile_with_mean(const at::Tensor& x, const TileLayout& layout, bool with_mean);
at::Tensor untile_gather(const at::Tensor& tiled, const TileLayout& layout);
at::Tensor untile_gated(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                        const at::Tensor& gate);
at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const std::string& feature_map, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace vidgraph::attention::gpu
