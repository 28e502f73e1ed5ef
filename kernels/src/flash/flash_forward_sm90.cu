// Host side of the Hopper (sm_90a) forward: availability check, shared-memory sizing, dispatch
// over variant, head dim and dtype. Instances: {Serial, Overlap2, Overlap3, Dense2Wg} ×
// D ∈ {64, 128} × {bf16, fp16}. Compiled for every CUDA
// target; only the sm_90a device pass holds wgmma code (other passes hold a trapping stub that
// wgmma_forward_available() keeps from being launched).
#include "../common/check.h"
#include "flash_forward_sm90.h"
#include "flash_fwd_wgmma_kernel.h"
#include "flash_fwd_wgmma_overlap_kernel.h"

#include <string>
#include <utility>

namespace vidgraph::kernels::flash {
namespace {

template <typename Kernel>
Status launch_kernel(Kernel kernel, dim3 grid, int threads, size_t smem,
                     const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s) {
  if (vgFuncSetAttribute(kernel, vgFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      vgSuccess) {
    (void)vgGetLastError();
    return detail::set_error(Status::Unsupported,
                             "flash_forward (wgmma): the device cannot give " +
                                 std::to_string(smem) + " bytes of shared memory to one block.");
  }
  kernel<<<grid, threads, smem, s>>>(p, tune);
  VG_CHECK_LAUNCH("flash_forward (wgmma)");
  return Status::Ok;
}

template <int D, typename T>
Status launch_typed(const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s,
                    WgmmaVariant v) {
  const int max_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const int q_blocks = (p.seq_q + kBlock - 1) / kBlock;
  const dim3 grid(q_blocks, p.heads, p.batch);
  switch (v) {
    case WgmmaVariant::Serial:
      return launch_kernel(flash_fwd_wgmma_kernel<D, T>, grid, kThreads,
                           wgmma_fwd_smem_bytes<D>(max_list), p, tune, s);
    case WgmmaVariant::Overlap2:
      return launch_kernel(flash_fwd_wgmma_overlap_kernel<D, T, 2, 1>, grid, kThreads,
                           wgmma_overlap_smem_bytes<D, 2, 1>(max_list), p, tune, s);
    case WgmmaVariant::Dense2Wg:
      return launch_kernel(flash_fwd_wgmma_overlap_kernel<D, T, 3, 2>,
                           dim3((q_blocks + 1) / 2, p.heads, p.batch), 2 * kThreads,
                           wgmma_overlap_smem_bytes<D, 3, 2>(0), p, tune, s);
    default:
      return launch_kernel(flash_fwd_wgmma_overlap_kernel<D, T, 3, 1>, grid, kThreads,
                           wgmma_overlap_smem_bytes<D, 3, 1>(max_list), p, tune, s);
  }
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

const char* wgmma_variant_name(WgmmaVariant v) {
  switch (v) {
    case WgmmaVariant::Auto: return "auto";
    case WgmmaVariant::Serial: return "serial";
    case WgmmaVariant::Overlap2: return "overlap2";
    case WgmmaVariant::Overlap3: return "overlap3";
    case WgmmaVariant::Dense2Wg: return "dense2wg";
  }
  return "?";
}

Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t s, WgmmaVariant v) {
  if (v == WgmmaVariant::Auto)
    v = p.q2k.index == nullptr ? WgmmaVariant::Dense2Wg : WgmmaVariant::Overlap3;
  VG_REQUIRE(v != WgmmaVariant::Dense2Wg || p.q2k.index == nullptr,
             "flash_forward (wgmma): the two-warpgroup variant runs dense attention only; pass "
             "no block list or pick another variant.");
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_typed<64, Bf16>(p, tune, s, v) : launch_typed<64, Fp16>(p, tune, s, v);
  return bf16 ? launch_typed<128, Bf16>(p, tune, s, v) : launch_typed<128, Fp16>(p, tune, s, v);
}

}  // namespace vidgraph::kernels::flash
