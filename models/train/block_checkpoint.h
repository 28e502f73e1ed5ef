// The DiT forward for training, optionally with gradient checkpointing per block: each block runs
// without keeping its activations, and its backward recomputes it (a custom autograd function),
// trading one extra block forward for the memory of all intermediate activations. Gradients are
// the same as without checkpointing (the recomputation is deterministic: no dropout, and the sparse
// selection is a function of its inputs).
#pragma once

#include <ATen/core/Tensor.h>

#include "models/wan/wan_attention.h"
#include "models/wan/wan_model.h"

namespace vidgraph::train {

// Same contract as WanModelImpl::forward. With checkpointing, `model` and `run` must outlive the
// backward pass of the result (the blocks recompute with them).
at::Tensor training_forward(wan::WanModelImpl& model, const at::Tensor& x, const at::Tensor& t,
                            const at::Tensor& context, const wan::AttentionRun& run, bool checkpointing);

// The tensors of one block that require grad: its parameters and its LoRA adapters' tensors.
std::vector<at::Tensor> block_trainable_tensors(wan::WanAttentionBlockImpl& block);

}  // namespace vidgraph::train
