// Host side of the Hopper (sm_90a) forward: availability check, shared-memory sizing, the TMA
// tensor maps (built with cuTensorMapEncodeTiled, reached through the runtime's driver entry
// point: no libcuda link) and dispatch over dense / listed, head dim and dtype. Instances:
// {two warpgroups (dense), one warpgroup (lists)} x D in {64, 128} x {bf16, fp16}. Compiled for
// every CUDA target; only the sm_90a device pass holds wgmma code (other passes hold a trapping
// stub that wgmma_forward_available() keeps from being launched).
#include "../common/check.h"
#include "flash_forward_sm90.h"
#include "flash_fwd_wgmma_kernel.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace vidgraph::kernels::flash {
namespace {

// A 4-D map of a [B, S, H, D] view (dims innermost first: D, H, S, B), box 64 x 1 x 64 x 1
// (one 64-column panel of 64 rows), 128B swizzle, zero fill past the end (wgmma.h).
Status make_map(CUtensorMap* map, const TensorView& t, int batch, int seq, int heads, int d,
                bool bf16, const char* what) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                              const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                              const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                           cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn,
                                                  cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
      (void)vgGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<Encode>(fn);
  }();
  if (encode == nullptr)
    return detail::set_error(Status::Unsupported,
                             "flash_forward (wgmma): the driver has no cuTensorMapEncodeTiled; "
                             "turn the tuning row's fwd_wgmma off (mma.sync forward).");
  // A size-1 dimension's stride is never used; any multiple of 16 bytes keeps the encoder happy.
  auto stride = [](int64_t elems, int size) {
    return size > 1 ? cuuint64_t(elems) * 2 : cuuint64_t(16);
  };
  const cuuint64_t dims[4] = {cuuint64_t(d), cuuint64_t(heads), cuuint64_t(seq),
                              cuuint64_t(batch)};
  const cuuint64_t strides[3] = {stride(t.stride_h, heads), stride(t.stride_s, seq),
                                 stride(t.stride_b, batch)};
  const cuuint32_t box[4] = {64, 1, 64, 1}, elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                            4, t.data, dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return detail::set_error(Status::Unsupported,
                             std::string("flash_forward (wgmma): no tensor map for ") + what +
                                 " (CUresult " + std::to_string(int(r)) +
                                 "; TMA needs a 16-byte aligned base and strides); pass aligned "
                                 "views or turn the tuning row's fwd_wgmma off.");
  return Status::Ok;
}

Status make_maps(wgmma::TmaMaps* m, const FlashForwardParams& p) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  Status st = make_map(&m->q, p.q, p.batch, p.seq_q, p.heads, p.head_dim, bf16, "q");
  if (st == Status::Ok) st = make_map(&m->k, p.k, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, "k");
  if (st == Status::Ok) st = make_map(&m->v, p.v, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, "v");
  return st;
}

template <int D, typename T, int kWG>
Status launch_typed(const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s) {
  const int max_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const int q_blocks = (p.seq_q + kBlock - 1) / kBlock;
  const dim3 grid((q_blocks + kWG - 1) / kWG, p.heads, p.batch);
  const size_t smem = wgmma_fwd_smem_bytes<D, kWG>(kWG == 1 ? max_list : 0);
  wgmma::TmaMaps maps{};
  const Status st = make_maps(&maps, p);
  if (st != Status::Ok) return st;
  auto kernel = flash_fwd_wgmma_kernel<D, T, kWG>;
  if (vgFuncSetAttribute(kernel, vgFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      vgSuccess) {
    (void)vgGetLastError();
    return detail::set_error(Status::Unsupported,
                             "flash_forward (wgmma): the device cannot give " +
                                 std::to_string(smem) + " bytes of shared memory to one block.");
  }
  kernel<<<grid, wgmma_fwd_threads<kWG>(), smem, s>>>(p, tune, maps);
  VG_CHECK_LAUNCH("flash_forward (wgmma)");
  return Status::Ok;
}

// Two warpgroups sharing K/V without a list (dense), one warpgroup per query block with one.
template <int D, typename T>
Status launch_dense_or_listed(const FlashForwardParams& p, const AttentionTuning& tune,
                              vgStream_t s) {
  return p.q2k.index == nullptr ? launch_typed<D, T, 2>(p, tune, s)
                                : launch_typed<D, T, 1>(p, tune, s);
}

}  // namespace

#if defined(VG_HAS_SM90A)
namespace {

// Whether device `dev` can run the sm_90a kernels, and why not: "" when it can.
std::string unavailable_reason(int dev) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    const cudaError_t e = vgGetLastError();
    return std::string("the device could not be queried: ") + cudaGetErrorString(e);
  }
  if (major != 9 || minor != 0)
    return "the device is sm_" + std::to_string(major * 10 + minor) + ", not sm_90";
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, flash_fwd_wgmma_kernel<128, Bf16, 2>);
  if (e != cudaSuccess) {
    (void)vgGetLastError();
    return std::string("the sm_90a kernel cannot be loaded: ") + cudaGetErrorString(e);
  }
  return std::string();
}

}  // namespace
#endif

bool wgmma_forward_available(std::string* why) {
#if defined(VG_HAS_SM90A)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    const cudaError_t e = vgGetLastError();
    if (why) *why = std::string("the device could not be queried: ") + cudaGetErrorString(e);
    return false;
  }
  // Asked on every forward call: the answer per device is found once (it cannot change).
  static std::mutex mutex;
  static std::map<int, std::string> reasons;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = reasons.find(dev);
  if (it == reasons.end()) it = reasons.emplace(dev, unavailable_reason(dev)).first;
  if (why) *why = it->second;
  return it->second.empty();
#else
  if (why) *why = "this build has no sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)";
  return false;
#endif
}

Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t s) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_dense_or_listed<64, Bf16>(p, tune, s)
                : launch_dense_or_listed<64, Fp16>(p, tune, s);
  return bf16 ? launch_dense_or_listed<128, Bf16>(p, tune, s)
              : launch_dense_or_listed<128, Fp16>(p, tune, s);
}

}  // namespace vidgraph::kernels::flash
