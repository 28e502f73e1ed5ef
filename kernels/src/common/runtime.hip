// Error state and per-device tuning selection of the kernels layer.
#include "arch_config.h"
#include "check.h"

#include <string>

namespace vidgraph::kernels {
namespace {
thread_local std::string g_last_error;
}

const char* last_error() { return g_last_error.c_str(); }

namespace detail {

Status set_error(Status s, const std::string& message) {
  g_last_error = message;
  return s;
}

AttentionTuning resolve_tuning(const AttentionTuning* requested) {
  return requested != nullptr ? *requested : default_tuning();
}

}  // namespace detail

AttentionTuning default_tuning() {
#if defined(VG_PLATFORM_HIP)
  return kTuningCdna;
#else
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
    (void)vgGetLastError();
    return kTuningAmpere;
  }
  return major == 9 ? kTuningHopper : kTuningAmpere;
#endif
}

}  // namespace vidgraph::kernels
