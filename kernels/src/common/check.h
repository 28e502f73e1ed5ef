// Error reporting of the host launchers: a thread-local message and Status values. Launchers
// never exit or throw; they set the message and return a Status.
//  VG_REQUIRE(cond, msg)  → InvalidArgument with `msg` when cond is false
//  VG_CHECK_LAUNCH(what)  → LaunchFailed with the runtime's error text after a launch
#pragma once

#include "vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

#include <string>

namespace vidgraph::kernels::detail {

Status set_error(Status s, const std::string& message);
AttentionTuning resolve_tuning(const AttentionTuning* requested);

// Lets `kernel` take `bytes` of dynamic shared memory; Unsupported naming `who` (and `what_to_do`,
// a sentence) when the device cannot give that much to one block.
template <typename Kernel>
Status allow_shared_memory(Kernel kernel, size_t bytes, const std::string& who,
                           const std::string& what_to_do = "") {
  if (vgFuncSetAttribute(kernel, vgFuncAttributeMaxDynamicSharedMemorySize, int(bytes)) ==
      vgSuccess)
    return Status::Ok;
  (void)vgGetLastError();
  return set_error(Status::Unsupported, who + ": the device cannot give " + std::to_string(bytes) +
                                            " bytes of shared memory to one block." +
                                            (what_to_do.empty() ? "" : " " + what_to_do));
}

}  // namespace vidgraph::kernels::detail

#define VG_REQUIRE(cond, msg)                                                              \
  do {                                                                                     \
    if (!(cond))                                                                           \
      return ::vidgraph::kernels::detail::set_error(::vidgraph::kernels::Status::InvalidArgument, \
                                                    std::string(msg));                     \
  } while (0)

#define VG_CHECK_LAUNCH(what)                                                               \
  do {                                                                                      \
    const vgError_t vg_err_ = vgGetLastError();                                             \
    if (vg_err_ != vgSuccess)                                                               \
      return ::vidgraph::kernels::detail::set_error(                                        \
          ::vidgraph::kernels::Status::LaunchFailed,                                        \
          std::string(what) + " failed to launch: " + vgGetErrorString(vg_err_) + " (" +   \
              __FILE__ + ":" + std::to_string(__LINE__) + ")");                             \
  } while (0)
