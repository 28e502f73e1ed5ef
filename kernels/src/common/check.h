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
