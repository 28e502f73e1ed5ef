// The block-sparse attention autograd Function. See block_sparse_function.h.
#include "plugins/attention/block_sparse_function.h"

#include <torch/csrc/autograd/custom_function.h>

namespace vidgraph::attention {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class BlockSparseFunction : public torch::autograd::Function<BlockSparseFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const BlockSparsePlan* plan) {
    TORCH_CHECK(!plan->dense || plan->path->dense_strided(), "block-sparse attention: the ", plan->path->name(),
                " path does not take the dense form");
    // Tiled form: contiguous; dense form: the callers' [B, S, H, D] tensors, untouched.
    SparseForwardArgs args;
    args.q = plan->dense ? q : q.contiguous();
    args.k = plan->dense ? k : k.contiguous();
    args.v = plan->dense ? v : v.contiguous();
    args.tile_sizes = plan->tile_sizes;
    args.q2k = plan->selection.q2k;
    args.tile_volume = plan->tile_volume;
    args.scale = plan->scale;
    SparseForwardResult r = plan->path->sparse_forward(args);
    ctx->save_for_backward({args.q, args.k, args.v, r.out, r.lse, plan->selection.q2k, plan->selection.k2q,
                            plan->selection.k2q_count, plan->tile_sizes});
    ctx->saved_data["tile_volume"] = plan->tile_volume;
    ctx->saved_data["scale"] = plan->scale;
    ctx->saved_data["dense"] = plan->dense;
    return {r.out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const bool dense = ctx->saved_data["dense"].toBool();
    SparseBackwardArgs args;
    args.dout = dense ? grads[0] : grads[0].contiguous();
    args.q = saved[0];
    args.k = saved[1];
    args.v = saved[2];
    args.out = saved[3];
    args.lse = saved[4];
    args.q2k = saved[5];
    args.k2q = saved[6];
    args.k2q_count = saved[7];
    args.tile_sizes = saved[8];
    args.tile_volume = ctx->saved_data["tile_volume"].toInt();
    args.scale = ctx->saved_data["scale"].toDouble();
    // Looked up again: the path may have been shut down since the forward (a clear error, not a crash).
    DevicePath& path = require_device_path(args.q.device().type(), "block-sparse attention backward");
    SparseBackwardResult r = path.sparse_backward(args);
    return {r.dq, r.dk, r.dv, at::Tensor()};
  }
};

}  // namespace

at::Tensor block_sparse_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const BlockSparsePlan& plan) {
  return BlockSparseFunction::apply(q, k, v, &plan)[0];
}

}  // namespace vidgraph::attention
