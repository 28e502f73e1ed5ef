// Timing and device-memory probes of vidgraph-model-bench.
//
// Protocol (the one vidgraph-attention bench uses, see app/cli/attention_bench.cpp): `warmup`
// untimed runs, then `repeats` timed runs; on CUDA each run is bracketed by two CUDA events on the
// current stream and the host waits on the second one, on the CPU the host's steady clock is used.
// Peak memory is the caching allocator's peak of allocated bytes since the counter was reset at the
// start of the measurement (CUDA only; 0 elsewhere).
#pragma once

#include <functional>
#include <string>

#include <c10/core/Device.h>
#include <nlohmann/json_fwd.hpp>

namespace vidgraph::bench {

struct RunStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
  double base_gib = 0;  // allocated when the measurement started
  double peak_gib = 0;  // peak allocated during it (absolute, includes base)
};

// Times `body` as described above. Throws std::runtime_error when `device` is a GPU and this
// LibTorch has no CUDA support.
RunStats time_runs(c10::Device device, int warmup, int repeats, const std::function<void()>& body);

// {"median_ms", "min_ms", "max_ms", "runs", "peak_gib", "base_gib", "peak_above_base_gib"}; the
// memory keys only on CUDA.
nlohmann::json to_json(const RunStats& stats, c10::Device device);

// Bytes allocated by the caching allocator now (0 on the CPU).
double allocated_gib(c10::Device device);
// Waits for the device's queued work and returns cached blocks to the driver (no-op on the CPU).
void release_cached_memory(c10::Device device);
// Whether this build can time and allocate on `device`.
bool device_usable(c10::Device device, std::string* why);
// "NVIDIA H200" (the CUDA device name), or "cpu".
std::string device_name(c10::Device device);

}  // namespace vidgraph::bench
