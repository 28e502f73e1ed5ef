// Implements device_memory.h over c10's caching allocator of CUDA, or of HIP on a ROCm LibTorch
// (whose GPUs are CUDA devices to ATen; its allocator is the hipified copy in c10_hip).
#include "models/device/device_memory.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>

#if defined(VIDGRAPH_GPU_MEMORY_STATS_CUDA)
#define VIDGRAPH_HAVE_GPU_MEMORY_STATS 1
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
namespace gpu_allocator = c10::cuda::CUDACachingAllocator;
namespace gpu_runtime = c10::cuda;
#define VIDGRAPH_GPU_MEM_GET_INFO cudaMemGetInfo
#define VIDGRAPH_GPU_SUCCESS cudaSuccess
#elif defined(VIDGRAPH_GPU_MEMORY_STATS_HIP)
#define VIDGRAPH_HAVE_GPU_MEMORY_STATS 1
#include <c10/hip/HIPCachingAllocator.h>
#include <c10/hip/HIPFunctions.h>
namespace gpu_allocator = c10::hip::HIPCachingAllocator;
namespace gpu_runtime = c10::hip;
#define VIDGRAPH_GPU_MEM_GET_INFO hipMemGetInfo
#define VIDGRAPH_GPU_SUCCESS hipSuccess
#endif
#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
#include <ATen/ops/empty.h>
#endif

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
    return "this build's LibTorch has neither CUDA nor ROCm, so GPU memory counters are unavailable";
  }
  return std::string();
}

#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
c10::DeviceIndex index_of(const c10::Device& device) {
  return device.has_index() ? device.index() : gpu_runtime::current_device();
}
#endif  // VIDGRAPH_HAVE_GPU_MEMORY_STATS

}  // namespace

bool device_memory_counters_built() {
#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
  return true;
#else
  return false;
#endif  // VIDGRAPH_HAVE_GPU_MEMORY_STATS
}

DeviceMemoryStats device_memory_stats(const c10::Device& device) {
  const std::string why = why_unavailable(device);
  if (!why.empty()) return unavailable(why);
#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
  try {
    const auto stats = gpu_allocator::getDeviceStats(index_of(device));
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
#endif  // VIDGRAPH_HAVE_GPU_MEMORY_STATS
}

bool reset_peak_device_memory(const c10::Device& device) {
  if (!why_unavailable(device).empty()) return false;
#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
  try {
    // The caching allocator of a device exists only once something was allocated there; a stage
    // that starts before the first allocation (Load Wan Model in a fresh process: on the H200 its
    // report was missing) would find no counter to reset.
    (void)at::empty({1}, at::TensorOptions().device(device));
    gpu_allocator::resetPeakStats(index_of(device));
    return true;
  } catch (const std::exception&) {
    return false;
  }
#else
  return false;
#endif  // VIDGRAPH_HAVE_GPU_MEMORY_STATS
}

int64_t free_device_memory(const c10::Device& device) {
  if (device.is_cpu()) return available_ram_bytes();
  if (!why_unavailable(device).empty()) return -1;
#ifdef VIDGRAPH_HAVE_GPU_MEMORY_STATS
  try {
    // A fresh process has neither the device's context nor its allocator's stats (which then throw:
    // on an H200 this gave "unknown" and no check); one small tensor creates both, as for the reset.
    (void)at::empty({1}, at::TensorOptions().device(device));
    const c10::DeviceIndex index = index_of(device);
    const c10::DeviceIndex previous = gpu_runtime::current_device();
    gpu_runtime::set_device(index);  // the driver answers for the current device
    size_t free = 0;
    size_t total = 0;
    const bool ok = VIDGRAPH_GPU_MEM_GET_INFO(&free, &total) == VIDGRAPH_GPU_SUCCESS;
    gpu_runtime::set_device(previous);
    if (!ok) return -1;
    const auto stats = gpu_allocator::getDeviceStats(index);
    const int64_t cached_unused = stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
    return static_cast<int64_t>(free) + cached_unused;
  } catch (const std::exception&) {
    return -1;
  }
#else
  return -1;
#endif  // VIDGRAPH_HAVE_GPU_MEMORY_STATS
}

int64_t available_ram_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return int64_t(sysconf(_SC_AVPHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
}

std::string format_gib(int64_t bytes) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace vidgraph::device
