// Host side shared by the Hopper kernels (sm90_host.h). The tensor-map encoder is reached through
// the runtime's driver entry point: no libcuda link.
#include "../common/check.h"
#include "sm90_host.h"

#include <map>
#include <mutex>
#include <string>

namespace vidgraph::kernels::flash {
namespace {

// Compiled like the Hopper kernels: it loads on an sm_90 device only if the binary has sm_90a code.
__global__ void sm90a_probe() {}

#if defined(VG_HAS_SM90A)
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
  const cudaError_t e = cudaFuncGetAttributes(&attr, sm90a_probe);
  if (e != cudaSuccess) {
    (void)vgGetLastError();
    return std::string("the sm_90a code cannot be loaded: ") + cudaGetErrorString(e);
  }
  return std::string();
}
#endif

}  // namespace

bool hopper_kernels_available(std::string* why) {
#if defined(VG_HAS_SM90A)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    const cudaError_t e = vgGetLastError();
    if (why) *why = std::string("the device could not be queried: ") + cudaGetErrorString(e);
    return false;
  }
  // Asked on every attention call: the answer per device is found once (it cannot change).
  static std::mutex mutex;
  static std::map<int, std::string> reasons;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = reasons.find(dev);
  if (it == reasons.end()) it = reasons.emplace(dev, unavailable_reason(dev)).first;
  if (why) *why = it->second;
  return it->second.empty();
#else
  (void)sm90a_probe;
  if (why) *why = "this build has no sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)";
  return false;
#endif
}

Status make_tensor_map(CUtensorMap* map, const TensorView& t, int batch, int seq, int heads, int d,
                       bool bf16, const char* who, const char* what, const char* knob) {
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
                             std::string(who) + ": the driver has no cuTensorMapEncodeTiled; "
                             "turn the tuning row's " + knob + " off (mma.sync kernels).");
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
                             std::string(who) + ": no tensor map for " + what + " (CUresult " +
                                 std::to_string(int(r)) +
                                 "; TMA needs a 16-byte aligned base and strides); pass aligned "
                                 "views or turn the tuning row's " + knob + " off.");
  return Status::Ok;
}

}  // namespace vidgraph::kernels::flash
