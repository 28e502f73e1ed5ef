// Global→shared tile copies for the attention kernels, with the cache-hint knob.
// Contract: copy16(dst, src, valid, evict_first) moves 16 bytes (both 16-byte aligned), writing
// zeros when !valid (src is then not read). On NVIDIA sm_80+ it is an asynchronous cp.async
// (bypassing L1; with evict_first the L2 line is marked evict-first, for streamed K/V); callers
// then copy_commit() and copy_wait<N>() (N groups may stay in flight) before a block barrier.
// On AMD the copy is synchronous (a non-temporal load when evict_first) and commit/wait are no-ops.
#pragma once

#include "vendor.h"

#include <cstdint>

namespace vidgraph::kernels {

VG_DEVICE void copy16(void* dst, const void* src, bool valid, bool evict_first) {
#if defined(VG_NVIDIA_MMA)
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  const int n = valid ? 16 : 0;
  if (evict_first) {
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(d),
                 "l"(src), "r"(n), "l"(policy));
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n));
  }
#else
  uint4 v = make_uint4(0, 0, 0, 0);
  if (valid) {
#if defined(VG_PLATFORM_HIP)
    typedef unsigned int vg_u32x4 __attribute__((ext_vector_type(4)));
    const vg_u32x4* s4 = reinterpret_cast<const vg_u32x4*>(src);
    const vg_u32x4 w = evict_first ? __builtin_nontemporal_load(s4) : *s4;
    v = make_uint4(w[0], w[1], w[2], w[3]);
#else
    (void)evict_first;
    v = *reinterpret_cast<const uint4*>(src);
#endif
  }
  *reinterpret_cast<uint4*>(dst) = v;
#endif
}

VG_DEVICE void copy_commit() {
#if defined(VG_NVIDIA_MMA)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
VG_DEVICE void copy_wait() {
#if defined(VG_NVIDIA_MMA)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

}  // namespace vidgraph::kernels
