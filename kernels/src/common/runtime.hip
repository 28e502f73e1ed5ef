// Error state and per-device tuning selection of the kernels layer.
#include "arch_config.h"
#include "check.h"

#include <cstdio>
#include <cstdlib>
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

namespace {

// VIDGRAPH_ATTENTION_TUNING="fwd_stages,bwd_stages,evict_first,index_in_shared[,fwd_q_in_shared
// [,bwd_q_in_shared[,fwd_wgmma[,bwd_wgmma]]]]" (e.g. "2,1,0,1,0,1" or "1,1,0,1,1,1,1,1")
// replaces the table row; used by benchmark sweeps. Malformed values are ignored.
bool tuning_from_env(AttentionTuning* t) {
  const char* env = std::getenv("VIDGRAPH_ATTENTION_TUNING");
  int f = 0, b = 0, e = 0, i = 0, qf = 0, qb = 0, wf = 0, wb = 0;
  if (env == nullptr ||
      std::sscanf(env, "%d,%d,%d,%d,%d,%d,%d,%d", &f, &b, &e, &i, &qf, &qb, &wf, &wb) < 4)
    return false;
  if (f < 1 || f > 2 || b < 1 || b > 2) return false;
  *t = AttentionTuning{f, b, e != 0, i != 0, qf != 0, qb != 0, wf != 0, wb != 0};
  return true;
}

}  // namespace

AttentionTuning default_tuning() {
  AttentionTuning from_env;
  if (tuning_from_env(&from_env)) return from_env;
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
