// Host side of the Hopper (sm_90a) forward: availability check, shared-memory sizing, dispatch
// over head dim and dtype. Instances: D ∈ {64, 128} × {bf16, fp16}. Compiled for every CUDA
// target; only the sm_90a device pass holds wgmma code (other passes hold a trapping stub that
// wgmma_forward_available() keeps from being launched).
#include "../common/check.h"
#include "flash_forward_sm90.h"
#include "flash_fwd_wgmma_kernel.h"

#include <string>
#include <utility>

namespace vidgraph::kernels::flash {
namespace {

template <int D, typename T>
Status launch_wgmma_variant(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t s) {
  const int max_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const size_t smem = wgmma_fwd_smem_bytes<D>(max_list);
  auto kernel = flash_fwd_wgmma_kernel<D, T>;
  if (vgFuncSetAttribute(kernel, vgFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      vgSuccess) {
    (void)vgGetLastError();
    return detail::set_error(Status::Unsupported,
                             "flash_forward (wgmma): the device cannot give " +
                                 std::to_string(smem) + " bytes of shared memory to one block.");
  }
  const dim3 grid((p.seq_q + kBlock - 1) / kBlock, p.heads, p.batch);
  kernel<<<grid, kThreads, smem, s>>>(p, tune);
  VG_CHECK_LAUNCH("flash_forward (wgmma)");
  return Status::Ok;
}

}  // namespace

bool wgmma_forward_available(std::string* why) {
  auto no = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
#if defined(VG_HAS_SM90A)
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    const cudaError_t e = vgGetLastError();
    return no(std::string("the device could not be queried: ") + cudaGetErrorString(e));
  }
  if (major != 9 || minor != 0)
    return no("the device is sm_" + std::to_string(major * 10 + minor) + ", not sm_90");
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, flash_fwd_wgmma_kernel<128, Bf16>);
  if (e != cudaSuccess) {
    (void)vgGetLastError();
    return no(std::string("the sm_90a kernel cannot be loaded: ") + cudaGetErrorString(e));
  }
  return true;
#else
  return no("this build has no sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)");
#endif
}

Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t s) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_wgmma_variant<64, Bf16>(p, tune, s)
                : launch_wgmma_variant<64, Fp16>(p, tune, s);
  return bf16 ? launch_wgmma_variant<128, Bf16>(p, tune, s)
              : launch_wgmma_variant<128, Fp16>(p, tune, s);
}

}  // namespace vidgraph::kernels::flash
