#include <fstream>
#include <string>

#include "models/device/device_memory.h"
#include "models/train/trainer_parts.h"

namespace vidgraph::train {

namespace {

// VmHWM of /proc/self/status in bytes, or 0 where it cannot be read.
int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
    }
  }
  return 0;
}

}  // namespace

StepMemory::StepMemory(const c10::Device& device) : device_(device) {
  if (device_.is_cuda()) {
    device::reset_peak_device_memory(device_);
  } else {
    std::ofstream("/proc/self/clear_refs") << "5";  // restarts VmHWM at the current RSS (Linux >= 4.0)
  }
}

int64_t StepMemory::peak_bytes() const {
  if (device_.is_cuda()) {
    const device::DeviceMemoryStats s = device::device_memory_stats(device_);
    return s.available ? s.peak_bytes : 0;
  }
  return peak_rss_bytes();
}

}  // namespace vidgraph::train
