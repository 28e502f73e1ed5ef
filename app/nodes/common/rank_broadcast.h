// Internal: results that only rank 0 of a multi-process run computes (vidgraph-run --nproc, torchrun),
// handed to the other ranks over the process's group (models/parallel). Rank 0 sends whether it
// succeeded, then each tensor's shape and data; the others receive the same list. Every rank of the
// group calls it at the same point of its run: the node runs on every rank (its id is in
// RunOptions::every_rank_nodes), rank 0 computing and the others receiving.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/node_context.h"
#include "models/parallel/sequence_parallel.h"
#include "nodes/common/node_util.h"

namespace vidgraph::nodes {

// The process group of a run of several processes, as the front end hands it to the run
// (RunOptions::services), and back.
std::shared_ptr<const engine::RunServices> rank_group(std::shared_ptr<parallel::SequenceParallel> sp);
// The run's group when it has several ranks, else null.
std::shared_ptr<parallel::SequenceParallel> run_ranks(const engine::RunOptions& options);

// Whether this run is one of several ranks, and not rank 0 (then it receives).
bool receives_from_rank0(const engine::RunOptions& options);
// The process's group when `ctx`'s node runs on several ranks (its id is in
// RunOptions::every_rank_nodes, on rank 0 and on the others alike), else null.
std::shared_ptr<parallel::SequenceParallel> node_ranks(const engine::NodeContext& ctx);
// Whether this process is rank 0 of several and `ctx`'s node also runs on the others: then rank 0
// computes the node's result and sends it.
bool sends_to_other_ranks(const engine::NodeContext& ctx);

// Over `sp`: rank 0 sends `tensors` (fp32 on the CPU, any shapes; std::nullopt = it failed, and
// the others fail too). The others: returns rank 0's tensors (fp32 on the CPU), or std::nullopt
// when rank 0 failed. Throws what the collectives throw (a rank that died, a timeout).
std::optional<std::vector<at::Tensor>> broadcast_from_rank0(parallel::SequenceParallel& sp,
                                                            const std::optional<std::vector<at::Tensor>>& tensors);

// A result only rank 0 computes: on one process, on rank 0, or for a node the other ranks do not
// run, `compute()`; rank 0 then sends `pack(result)` to the other ranks (nothing when compute failed
// or pack threw, so they fail too). A rank above 0 returns `unpack(rank 0's tensors)`, or the error
// "Rank 0 could not <what>; its message says why.".
template <class T>
engine::Result<T> computed_on_rank0(const engine::NodeContext& ctx, const std::string& what,
                                    const std::function<engine::Result<T>()>& compute,
                                    const std::function<std::vector<at::Tensor>(const T&)>& pack,
                                    const std::function<engine::Result<T>(const std::vector<at::Tensor>&)>& unpack) {
  if (receives_from_rank0(ctx.options())) {
    const auto received = broadcast_from_rank0(*run_ranks(ctx.options()), std::nullopt);
    if (!received) return node_error(ctx, "Rank 0 could not " + what + "; its message says why.");
    return unpack(*received);
  }
  engine::Result<T> result = compute();
  if (!sends_to_other_ranks(ctx)) return result;
  std::optional<std::vector<at::Tensor>> tensors;
  std::string failed;
  try {
    if (result.ok()) tensors = pack(*result);
  } catch (const std::exception& e) {
    failed = e.what();
  }
  broadcast_from_rank0(*node_ranks(ctx), tensors);
  if (!failed.empty()) return node_error(ctx, "Sending the result to the other ranks failed: " + failed);
  return result;
}

}  // namespace vidgraph::nodes
