// Implements stage_memory.h over models/device.
#include "nodes/common/stage_memory.h"

#include "models/device/device_memory.h"
#include "nodes/nodes_log.h"

namespace vidgraph::nodes {

StageMemory::StageMemory(const c10::Device& device)
    : device_(device), active_(device::reset_peak_device_memory(device)) {}

std::string StageMemory::line(const std::string& stage) const {
  if (!active_) return std::string();
  const device::DeviceMemoryStats stats = device::device_memory_stats(device_);
  if (!stats.available) return std::string();
  return "peak GPU memory " + device::format_gib(stats.peak_bytes) + " (" + stage + "; " +
         device::format_gib(stats.allocated_bytes) + " allocated now)";
}

std::string StageMemory::report(const engine::NodeContext& ctx, const std::string& stage) const {
  const std::string text = line(stage);
  if (text.empty()) return text;
  ctx.log_info(text);
  nodes_logger()->debug("{}: {}", ctx.node_id(), text);
  return text;
}

}  // namespace vidgraph::nodes
