#include "models/train/block_checkpoint.h"

#include <array>

#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "models/train/lora.h"
#include "models/wan/wan_block.h"
#include "models/wan/wan_rope.h"

namespace vidgraph::train {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::vector<at::Tensor> block_trainable_tensors(wan::WanAttentionBlockImpl& block) {
  std::vector<at::Tensor> out;
  for (const auto& p : block.parameters()) {
    if (p.requires_grad()) {
      out.push_back(p);
    }
  }
  for (const auto& item : block.named_modules("", /*include_self=*/false)) {
    if (auto* linear = item.value()->as<wan::WanLinearImpl>(); linear && linear->adapter.attached()) {
      for (const at::Tensor& a : {linear->adapter.down, linear->adapter.up}) {
        if (a.requires_grad()) {
          out.push_back(a);
        }
      }
    }
  }
  return out;
}

namespace {

// Pointers kept in the autograd context: the block lives in the model, the run in the caller,
// both for the whole forward + backward (training_forward's contract).
struct BlockCall {
  wan::WanAttentionBlockImpl* block;
  const wan::AttentionRun* run;
  std::array<int64_t, 3> grid;
  wan::RopeTables rope;
};

class BlockCheckpoint : public torch::autograd::Function<BlockCheckpoint> {
 public:
  // Inputs: the call (not a tensor), x, e0, context, then the block's trainable tensors (so that
  // the block's output requires grad even when x, e0 and context do not, e.g. LoRA on a frozen model).
  static at::Tensor forward(AutogradContext* ctx, const BlockCall* call, const at::Tensor& x, const at::Tensor& e0,
                            const at::Tensor& context, at::TensorList trainable) {
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(call->block);
    ctx->saved_data["run"] = reinterpret_cast<int64_t>(call->run);
    ctx->saved_data["grid"] = std::vector<int64_t>(call->grid.begin(), call->grid.end());
    ctx->save_for_backward({x, e0, context, call->rope.cos, call->rope.sin, call->rope.rotation});
    return call->block->forward(x, e0, context, call->grid, call->rope, *call->run);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto* block = reinterpret_cast<wan::WanAttentionBlockImpl*>(ctx->saved_data["block"].toInt());
    const auto* run = reinterpret_cast<const wan::AttentionRun*>(ctx->saved_data["run"].toInt());
    const auto g = ctx->saved_data["grid"].toIntVector();
    const variable_list saved = ctx->get_saved_variables();
    const wan::RopeTables rope{saved[3], saved[4], saved[5]};
    variable_list inputs;
    // Detached copies of x, e0, context as leaves of the recomputation (edge i = tensor input i).
    for (int i = 0; i < 3; ++i) {
      inputs.push_back(saved[i].detach().requires_grad_(ctx->needs_input_grad(i)));
    }
    const std::vector<at::Tensor> trainable = block_trainable_tensors(*block);
    at::Tensor y;
    {
      at::AutoGradMode enable(true);
      y = block->forward(inputs[0], inputs[1], inputs[2], {g[0], g[1], g[2]}, rope, *run);
    }
    variable_list wrt;
    std::vector<int> slot;  // index in the result of each entry of wrt
    for (int i = 0; i < 3; ++i) {
      if (inputs[i].requires_grad()) {
        wrt.push_back(inputs[i]);
        slot.push_back(1 + i);
      }
    }
    for (size_t i = 0; i < trainable.size(); ++i) {
      wrt.push_back(trainable[i]);
      slot.push_back(4 + static_cast<int>(i));
    }
    variable_list result(4 + trainable.size());
    if (!wrt.empty()) {
      const variable_list grads = torch::autograd::grad({y}, wrt, {grad_out[0]}, /*retain_graph=*/false,
                                                        /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t i = 0; i < grads.size(); ++i) {
        result[slot[i]] = grads[i];
      }
    }
    return result;
  }
};

}  // namespace

at::Tensor training_forward(wan::WanModelImpl& model, const at::Tensor& x, const at::Tensor& t,
                            const at::Tensor& context, const wan::AttentionRun& run, bool checkpointing) {
  if (!checkpointing) {
    return model.forward(x, t, context, run);
  }
  // WanModelImpl::forward with each block behind BlockCheckpoint.
  wan::DitTokens in = model.embed(x, t, context, run);
  for (const auto& module : *model.blocks) {
    BlockCall call{module->as<wan::WanAttentionBlockImpl>(), &run, in.grid, in.rope};
    const std::vector<at::Tensor> trainable = block_trainable_tensors(*call.block);
    in.h = BlockCheckpoint::apply(&call, in.h, in.e0, in.context, at::TensorList(trainable));
  }
  return model.finish(in, run);
}

}  // namespace vidgraph::train
