// Implements device_memory.h over c10's CUDA caching allocator when it is built in.
#include "models/device/device_memory.h"

#include <cstdio>
#include <exception>

#ifdef VIDGRAPH_HAVE_CUDA_MEMORY_STATS
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif  // VIDGRAPH_HAVE_CUDA_MEMORY_STATS

namespace vidgraph::device {

namespace {

DeviceMemoryStats unavailable(std::string reason) {
  DeviceMemoryStats stats;
  stats.unavailable_reason = std::move(reason);
  return stats;
}

// Why `device` has no counters in this build, or "" when it has.
std::string why_unavailable(const c10::Device& device) {
  if (!device.is_cuda()) {
    return "no memory counters for " + c10::DeviceTypeName(device.type(), true) + " devices";
  }
  if (!device_memory_counters_built()) {
    return "this build's LibTorch has no CUDA, so GPU memory counters are unavailable";
  }
  return std::string();
}

#ifdef VIDGRAPH_HAVE_CUDA_MEMORY_STATS
c10::DeviceIndex index_of(const c10::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}
#endif  // VIDGRAPH_HAVE_CUDA_MEMORY_STATS

}  // namespace

bool device_memory_counters_built() {
#ifdef VIDGRAPH_HAVE_CUDA_MEMORY_STATS
  return true;
#else
  return false;
#endif  // VIDGRAPH_HAVE_CUDA_MEMORY_STATS
}

DeviceMemoryStats device_memory_stats(const c10::Device& device) {
  const std::string why = why_unavailable(device);
  if (!why.empty()) return unavailable(why);
#ifdef VIDGRAPH_HAVE_CUDA_MEMORY_STATS
  try {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_of(device));
    // Index 0 of every StatArray is the aggregate over the small and large pools (StatType::
    // AGGREGATE in LibTorch 1.13 and 2.x alike).
    DeviceMemoryStats out;
    out.available = true;
    out.allocated_bytes = stats.allocated_bytes[0].current;
    out.peak_bytes = stats.allocated_bytes[0].peak;
    return out;
  } catch (const std::exception& e) {
    return unavailable(std::string("reading the GPU memory counters failed: ") + e.what());
  }
#else
  return unavailable("GPU memory counters are not built in");
#endif  // VIDGRAPH_HAVE_CUDA_MEMORY_STATS
}

bool reset_peak_device_memory(const c10::Device& device) {
  if (!why_unavailable(device).empty()) return false;
#ifdef VIDGRAPH_HAVE_CUDA_MEMORY_STATS
  try {
    // The caching allocator of a device exists only once something was allocated there; a stage
    // that starts before the first allocation (Load Wan Model in a fresh process: on the H200 its
    // report was missing) would find no counter to reset.
    (void)at::empty({1}, at::TensorOptions().device(device));
    c10::cuda::CUDACachingAllocator::resetPeakStats(index_of(device));
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  return false;
#endif  // VIDGRAPH_HAVE_CUDA_MEMORY_STATS
}

std::string format_gib(int64_t bytes) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace vidgraph::device
