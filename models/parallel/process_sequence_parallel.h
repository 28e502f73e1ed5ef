// The process's sequence-parallel group, for code that cannot be handed one (the graph's sampler
// node runs inside the engine): the runner sets it once after joining the group, the node reads it.
#pragma once

#include <memory>

#include "models/parallel/sequence_parallel.h"

namespace vidgraph::parallel {

// Replaces the process's group (nullptr: run on one process). Thread-safe.
void set_process_sequence_parallel(std::shared_ptr<SequenceParallel> sp);
// The process's group, or nullptr when this process runs alone. Thread-safe.
std::shared_ptr<SequenceParallel> process_sequence_parallel();

}  // namespace vidgraph::parallel
