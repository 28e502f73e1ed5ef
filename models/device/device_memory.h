// Device memory counters for reports ("peak GPU memory of this stage"): the bytes that live tensors
// hold on a GPU now, and the highest that value reached since the last reset, as LibTorch's caching
// allocator counts them (memory the allocator keeps cached for reuse is not counted).
//
// Contract:
//   - Counters exist for GPU devices when this library was built against a LibTorch with CUDA
//     (CMake: the imported target c10_cuda) or with ROCm (c10_hip; ATen calls its GPUs CUDA
//     devices there too). Everywhere else — a CPU device, Debian's CPU-only LibTorch — the stats
//     say `available = false` with a sentence why, and reset is a no-op returning false.
//   - One peak counter per device, shared by the whole process: a stage resets it when it starts
//     and reads it when it ends; stages that run at the same time on one device see each other.
//   - Never throws: a failure to read the counters is reported as unavailable.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

namespace vidgraph::device {

struct DeviceMemoryStats {
  bool available = false;
  int64_t allocated_bytes = 0;  // held by live tensors now
  int64_t peak_bytes = 0;       // the highest allocated_bytes since the last reset
  std::string unavailable_reason;  // why not, when !available
};

// True when this build can read GPU memory counters at all (LibTorch with CUDA or ROCm).
bool device_memory_counters_built();

DeviceMemoryStats device_memory_stats(const c10::Device& device);

// Restarts the device's peak counter at its current allocation. False when unavailable.
bool reset_peak_device_memory(const c10::Device& device);

// Bytes a new allocation on `device` may still take, for checks before expensive work: on a GPU
// what the driver reports free plus what the caching allocator holds unused; on the CPU the RAM
// the process may still take (MemAvailable). -1 when this build cannot tell (a GPU without
// counters: see above).
int64_t free_device_memory(const c10::Device& device);

// RAM the process may still take: MemAvailable (free + reclaimable cache) from /proc/meminfo, or
// the free pages where that file is missing.
int64_t available_ram_bytes();

// Bytes as GiB with two decimals: 1610612736 -> "1.50 GiB".
std::string format_gib(int64_t bytes);

}  // namespace vidgraph::device
