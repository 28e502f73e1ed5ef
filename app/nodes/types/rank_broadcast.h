// Internal: results that only rank 0 of a multi-process run computes (vidgraph-run --nproc, torchrun),
// handed to the other ranks over the process's group (models/parallel). Rank 0 sends whether it
// succeeded, then each tensor's shape and data; the others receive the same list. Every rank of the
// group calls it at the same point of its run: the node runs on every rank (its id is in
// RunOptions::every_rank_nodes), rank 0 computing and the others receiving.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "engine/node_context.h"

namespace vidgraph::nodes {

// Whether this process is one of several ranks, and not rank 0 (then it receives).
bool receives_from_rank0();
// Whether this process is rank 0 of several and `ctx`'s node also runs on the others
// (RunOptions::every_rank_nodes): then rank 0 computes the node's result and sends it.
bool sends_to_other_ranks(const engine::NodeContext& ctx);

// Rank 0: sends `tensors` (fp32 on the CPU, any shapes; std::nullopt = it failed, and the others
// fail too). The others: returns rank 0's tensors (fp32 on the CPU), or std::nullopt when rank 0
// failed. Throws what the collectives throw (a rank that died, a timeout).
std::optional<std::vector<at::Tensor>> broadcast_from_rank0(const std::optional<std::vector<at::Tensor>>& tensors);

}  // namespace vidgraph::nodes
