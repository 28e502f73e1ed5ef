// Ulysses sequence parallelism: each of N ranks holds ceil(S/N) of the S tokens through the whole
// DiT (patch embedding, modulation, cross-attention and FFN are per token); around self-attention
// two all-to-alls trade the token split for a head split:
//   tokens_to_heads  [B, S/N, H, D] (this rank's tokens, every head)
//                 -> [B, S, H/N, D]  (every token, this rank's heads)
//   heads_to_tokens  the inverse.
// S is padded to a multiple of N; the padded slots (copies of the last token) are dropped by
// tokens_to_heads, so the attention backend sees exactly the single-process sequence of S tokens
// (same grid, same VSA tiles and selection), and heads_to_tokens restores them.
//
// Everything is autograd-capable: the backward of each all-to-all is its inverse; `gather` assumes
// the loss is computed identically on every rank from the gathered output (each rank keeps the
// gradient of its own slice). After backward, all_reduce_gradients sums the per-rank partial
// parameter gradients, giving the single-process gradients on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "models/parallel/process_group.h"

namespace vidgraph::parallel {

class SequenceParallel {
 public:
  explicit SequenceParallel(std::shared_ptr<ProcessGroupHandle> group);

  int rank() const { return group_->rank(); }
  int world_size() const { return group_->world_size(); }
  ProcessGroupHandle& group() const { return *group_; }

  // Throws std::invalid_argument unless `heads` divides by the world size.
  void check_heads(int64_t heads) const;
  // Tokens each rank holds for a sequence of `tokens`: ceil(tokens / N).
  int64_t local_tokens(int64_t tokens) const;
  // int64 [local_tokens] indices into the sequence; padded slots repeat the last token.
  at::Tensor local_indices(int64_t tokens, c10::Device device) const;

  // This rank's slice of x along `dim` (x.size(dim) == tokens).
  at::Tensor shard(const at::Tensor& x, int64_t dim, int64_t tokens) const;
  // Per-group tables x [B, G, ...] over `tokens` tokens in G equal consecutive groups
  // -> one row per local token [B, local_tokens, ...]; G == 1 stays as it is.
  at::Tensor shard_groups(const at::Tensor& x, int64_t tokens) const;
  // Every rank's slice [B, local_tokens, ...] -> the whole [B, tokens, ...] on every rank.
  at::Tensor gather(const at::Tensor& local, int64_t tokens) const;

  // [B, local_tokens, H, D] -> [B, tokens, H/N, D] (pads dropped).
  at::Tensor tokens_to_heads(const at::Tensor& x, int64_t tokens) const;
  // [B, tokens, H/N, D] -> [B, local_tokens, H, D].
  at::Tensor heads_to_tokens(const at::Tensor& x) const;

  // Sums each defined .grad() over ranks, in place (every rank must pass the same parameters with
  // the same gradients defined, as the same model and graph on every rank give).
  void all_reduce_gradients(const std::vector<at::Tensor>& parameters) const;

 private:
  std::shared_ptr<ProcessGroupHandle> group_;
};

}  // namespace vidgraph::parallel
