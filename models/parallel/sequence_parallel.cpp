#include "models/parallel/sequence_parallel.h"

#include <stdexcept>
#include <string>
#include <utility>

#include <ATen/core/ivalue.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty_like.h>
#include <torch/csrc/autograd/custom_function.h>

namespace vidgraph::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The group travels through the autograd graph inside an IValue capsule, so that backward can
// run the inverse exchange even after the caller's SequenceParallel is gone.
struct GroupCapsule : torch::CustomClassHolder {
  explicit GroupCapsule(std::shared_ptr<ProcessGroupHandle> g) : group(std::move(g)) {}
  std::shared_ptr<ProcessGroupHandle> group;
};

c10::IValue capsule(const std::shared_ptr<ProcessGroupHandle>& g) {
  return c10::IValue::make_capsule(c10::make_intrusive<GroupCapsule>(g));
}

ProcessGroupHandle& group_of(const c10::IValue& v) {
  return *c10::static_intrusive_pointer_cast<GroupCapsule>(v.toCapsule())->group;
}

// [B, n, H, D] -> [B, N*n, H/N, D]: head group j goes to rank j; token block j comes from rank j.
at::Tensor exchange_to_heads(ProcessGroupHandle& g, const at::Tensor& x) {
  const int64_t N = g.world_size(), B = x.size(0), n = x.size(1), H = x.size(2), D = x.size(3);
  at::Tensor send = x.reshape({B, n, N, H / N, D}).permute({2, 0, 1, 3, 4}).contiguous();  // [N, B, n, h, D]
  at::Tensor recv = at::empty_like(send);
  g.all_to_all(recv, send);
  return recv.permute({1, 0, 2, 3, 4}).reshape({B, N * n, H / N, D});
}

// [B, N*n, h, D] -> [B, n, N*h, D]: token block j goes to rank j; head group j comes from rank j.
at::Tensor exchange_to_tokens(ProcessGroupHandle& g, const at::Tensor& y) {
  const int64_t N = g.world_size(), B = y.size(0), n = y.size(1) / N, h = y.size(2), D = y.size(3);
  at::Tensor send = y.reshape({B, N, n, h, D}).permute({1, 0, 2, 3, 4}).contiguous();  // [N, B, n, h, D]
  at::Tensor recv = at::empty_like(send);
  g.all_to_all(recv, send);
  return recv.permute({1, 2, 0, 3, 4}).reshape({B, n, N * h, D});
}

struct TokensToHeads : torch::autograd::Function<TokensToHeads> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const c10::IValue& group) {
    ctx->saved_data["group"] = group;
    return exchange_to_heads(group_of(group), x);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {exchange_to_tokens(group_of(ctx->saved_data["group"]), grads[0]), at::Tensor()};
  }
};

struct HeadsToTokens : torch::autograd::Function<HeadsToTokens> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y, const c10::IValue& group) {
    ctx->saved_data["group"] = group;
    return exchange_to_tokens(group_of(group), y);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {exchange_to_heads(group_of(ctx->saved_data["group"]), grads[0]), at::Tensor()};
  }
};

// [B, n, ...] -> [B, N*n, ...] in rank order; backward keeps this rank's slice of the gradient.
struct GatherTokens : torch::autograd::Function<GatherTokens> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, const c10::IValue& group) {
    ctx->saved_data["group"] = group;
    return at::cat(group_of(group).all_gather(local.contiguous()), 1);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    ProcessGroupHandle& g = group_of(ctx->saved_data["group"]);
    const int64_t n = grads[0].size(1) / g.world_size();
    return {grads[0].narrow(1, g.rank() * n, n), at::Tensor()};
  }
};

}  // namespace

SequenceParallel::SequenceParallel(std::shared_ptr<ProcessGroupHandle> group) : group_(std::move(group)) {
  if (!group_) throw std::invalid_argument("SequenceParallel needs a process group; none was given.");
}

void SequenceParallel::check_heads(int64_t heads) const {
  if (heads % world_size() != 0) {
    throw std::invalid_argument("Sequence parallelism splits the " + std::to_string(heads) +
                                " attention heads over " + std::to_string(world_size()) +
                                " processes, but they do not divide evenly; use a process count that divides " +
                                std::to_string(heads) + ".");
  }
}

int64_t SequenceParallel::local_tokens(int64_t tokens) const {
  return (tokens + world_size() - 1) / world_size();
}

at::Tensor SequenceParallel::local_indices(int64_t tokens, c10::Device device) const {
  const int64_t n = local_tokens(tokens);
  auto opts = at::TensorOptions().dtype(at::kLong).device(device);
  return at::arange(rank() * n, rank() * n + n, opts).clamp_max(tokens - 1);
}

at::Tensor SequenceParallel::shard(const at::Tensor& x, int64_t dim, int64_t tokens) const {
  if (x.size(dim) != tokens) {
    throw std::invalid_argument("SequenceParallel::shard: dim " + std::to_string(dim) + " has " +
                                std::to_string(x.size(dim)) + " entries, expected " + std::to_string(tokens) +
                                " tokens.");
  }
  return x.index_select(dim, local_indices(tokens, x.device()));
}

at::Tensor SequenceParallel::shard_groups(const at::Tensor& x, int64_t tokens) const {
  const int64_t G = x.size(1);
  if (G == 1) return x;
  if (tokens % G != 0) {
    throw std::invalid_argument("SequenceParallel: " + std::to_string(G) + " modulation groups do not divide " +
                                std::to_string(tokens) + " tokens evenly.");
  }
  return x.index_select(1, local_indices(tokens, x.device()).div(tokens / G, "floor"));
}

at::Tensor SequenceParallel::gather(const at::Tensor& local, int64_t tokens) const {
  if (local.size(1) != local_tokens(tokens)) {
    throw std::invalid_argument("SequenceParallel::gather: got " + std::to_string(local.size(1)) +
                                " local tokens, expected " + std::to_string(local_tokens(tokens)) + ".");
  }
  return GatherTokens::apply(local, capsule(group_)).narrow(1, 0, tokens);
}

at::Tensor SequenceParallel::tokens_to_heads(const at::Tensor& x, int64_t tokens) const {
  check_heads(x.size(2));
  if (x.dim() != 4 || x.size(1) != local_tokens(tokens)) {
    throw std::invalid_argument("SequenceParallel::tokens_to_heads expects [B, " +
                                std::to_string(local_tokens(tokens)) + ", H, D] for " + std::to_string(tokens) +
                                " tokens, got " + std::to_string(x.dim()) + " dims with " +
                                std::to_string(x.size(1)) + " tokens.");
  }
  return TokensToHeads::apply(x, capsule(group_)).narrow(1, 0, tokens);
}

at::Tensor SequenceParallel::heads_to_tokens(const at::Tensor& x) const {
  const int64_t tokens = x.size(1), padded = local_tokens(tokens) * world_size();
  at::Tensor y = padded == tokens ? x : at::constant_pad_nd(x, {0, 0, 0, 0, 0, padded - tokens}, 0.0);
  return HeadsToTokens::apply(y, capsule(group_));
}

void SequenceParallel::all_reduce_gradients(const std::vector<at::Tensor>& parameters) const {
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) {
      at::Tensor g = p.grad();
      group_->all_reduce_sum(g);
    }
  }
}

}  // namespace vidgraph::parallel
