// Implements bench_timing.h.
#include "bench_timing.h"

#include "models/device/device_memory.h"

#include <ATen/Context.h>
#if __has_include(<ATen/cuda/CUDAEvent.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#define VG_MODEL_BENCH_HAVE_CUDA 1
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace vidgraph::bench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

RunStats summarize(std::vector<double> ms) {
  RunStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  s.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  s.runs = static_cast<int>(n);
  return s;
}

#ifdef VG_MODEL_BENCH_HAVE_CUDA
int device_index(c10::Device device) {
  return device.has_index() ? device.index() : at::cuda::current_device();
}

RunStats time_cuda(c10::Device device, int warmup, int repeats, const std::function<void()>& body) {
  device::reset_peak_device_memory(device);
  const double base = double(device::device_memory_stats(device).allocated_bytes);
  std::vector<double> ms;
  for (int i = 0; i < warmup + repeats; ++i) {
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    start.record();
    body();
    stop.record();
    stop.synchronize();
    if (i >= warmup) ms.push_back(start.elapsed_time(stop));
  }
  RunStats s = summarize(ms);
  s.base_gib = base / kGiB;
  s.peak_gib = double(device::device_memory_stats(device).peak_bytes) / kGiB;
  return s;
}
#endif  // VG_MODEL_BENCH_HAVE_CUDA

}  // namespace

bool device_usable(c10::Device device, std::string* why) {
  if (device.is_cpu()) return true;
#ifdef VG_MODEL_BENCH_HAVE_CUDA
  if (device.is_cuda() && at::hasCUDA()) return true;
#endif
  if (why) {
    *why = "device '" + device.str() +
           "' cannot be used: this LibTorch build has no CUDA support or no GPU is visible; use --device cpu";
  }
  return false;
}

RunStats time_runs(c10::Device device, int warmup, int repeats, const std::function<void()>& body) {
  std::string why;
  if (!device_usable(device, &why)) throw std::runtime_error(why);
#ifdef VG_MODEL_BENCH_HAVE_CUDA
  if (device.is_cuda()) return time_cuda(device, warmup, repeats, body);
#endif
  using clock = std::chrono::steady_clock;
  std::vector<double> ms;
  for (int i = 0; i < warmup + repeats; ++i) {
    const auto t0 = clock::now();
    body();
    const auto t1 = clock::now();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return summarize(ms);
}

nlohmann::json to_json(const RunStats& s, c10::Device device) {
  nlohmann::json j{{"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"max_ms", s.max_ms}, {"runs", s.runs}};
  if (device.is_cuda()) {
    j["peak_gib"] = s.peak_gib;
    j["base_gib"] = s.base_gib;
    j["peak_above_base_gib"] = s.peak_gib - s.base_gib;
  }
  return j;
}

double allocated_gib(c10::Device device) {
  return double(device::device_memory_stats(device).allocated_bytes) / kGiB;  // 0 when unavailable
}

void release_cached_memory(c10::Device device) {
#ifdef VG_MODEL_BENCH_HAVE_CUDA
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#endif
  (void)device;
}

std::string device_name(c10::Device device) {
#ifdef VG_MODEL_BENCH_HAVE_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device_index(device))->name;
#endif
  return device.str();
}

}  // namespace vidgraph::bench
