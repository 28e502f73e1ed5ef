// Internal: the peak GPU memory of one node's stage, for the per-stage memory report. Construct it
// when the stage starts (it resets the device's peak counter); call report() when it ends: on a GPU
// with counters it posts "peak GPU memory <x> GiB (<stage>; <y> GiB allocated now)" as the node's
// info log event (so --json-events and the editor show it, attributed to the node) and writes the
// same line to the "nodes" spdlog logger at debug level (the event already reaches the program's
// sinks, so an info line would print twice). On the CPU, or where LibTorch has no CUDA, it does
// nothing.
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "engine/node_context.h"

namespace vidgraph::nodes {

class StageMemory {
 public:
  explicit StageMemory(const c10::Device& device);

  // The report line, or "" when the device has no counters. Does not post anything.
  std::string line(const std::string& stage) const;
  // Posts line(stage) as described above; returns it ("" = nothing posted).
  std::string report(const engine::NodeContext& ctx, const std::string& stage) const;

 private:
  c10::Device device_;
  bool active_ = false;
};

}  // namespace vidgraph::nodes
