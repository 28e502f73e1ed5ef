// Host side of the Hopper (sm_90a) forward: availability check, shared-memory sizing, dispatch
// over variant, head dim and dtype, and the TMA tensor maps of the *Tma variants (built with
// cuTensorMapEncodeTiled, reached through the runtime's driver entry point: no libcuda link).
// Instances: {Serial, Overlap2, Overlap3, Dense2Wg, Overlap3Tma, Dense2WgTma, Overlap3Ws,
// Dense2WgWs, Dense2WgPp} ×
// D ∈ {64, 128} × {bf16, fp16}. Compiled for every CUDA
// target; only the sm_90a device pass holds wgmma code (other passes hold a trapping stub that
// wgmma_forward_available() keeps from being launched).
#include "../common/check.h"
#include "flash_forward_sm90.h"
#include "flash_fwd_wgmma_kernel.h"
#include "flash_fwd_wgmma_overlap_kernel.h"

#include <cstdlib>
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
                             "flash_forward (wgmma, TMA): the driver has no "
                             "cuTensorMapEncodeTiled; use a non-TMA variant.");
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
                             std::string("flash_forward (wgmma, TMA): no tensor map for ") + what +
                                 " (CUresult " + std::to_string(int(r)) +
                                 "; TMA needs a 16-byte aligned base and strides); use a "
                                 "non-TMA variant.");
  return Status::Ok;
}

Status make_maps(wgmma::TmaMaps* m, const FlashForwardParams& p) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  Status st = make_map(&m->q, p.q, p.batch, p.seq_q, p.heads, p.head_dim, bf16, "q");
  if (st == Status::Ok) st = make_map(&m->k, p.k, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, "k");
  if (st == Status::Ok) st = make_map(&m->v, p.v, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, "v");
  return st;
}

template <typename Kernel>
Status launch_kernel(Kernel kernel, dim3 grid, int threads, size_t smem,
                     const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s,
                     bool tma = false) {
  wgmma::TmaMaps maps{};
  if (tma) {
    const Status st = make_maps(&maps, p);
    if (st != Status::Ok) return st;
  }
  if (vgFuncSetAttribute(kernel, vgFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      vgSuccess) {
    (void)vgGetLastError();
    return detail::set_error(Status::Unsupported,
                             "flash_forward (wgmma): the device cannot give " +
                                 std::to_string(smem) + " bytes of shared memory to one block.");
  }
  kernel<<<grid, threads, smem, s>>>(p, tune, maps);
  VG_CHECK_LAUNCH("flash_forward (wgmma)");
  return Status::Ok;
}

template <int D, typename T, int kStages, int kWG, int kLoad>
Status launch_overlap(dim3 grid, int max_list, const FlashForwardParams& p,
                      const AttentionTuning& tune, vgStream_t s) {
  return launch_kernel(flash_fwd_wgmma_overlap_kernel<D, T, kStages, kWG, kLoad>, grid,
                       wgmma_overlap_threads<kWG, kLoad>(),
                       wgmma_overlap_smem_bytes<D, kStages, kWG>(max_list), p, tune, s,
                       kLoad != kLoadCpAsync);
}

template <int D, typename T>
Status launch_typed(const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s,
                    WgmmaVariant v) {
  const int max_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const int q_blocks = (p.seq_q + kBlock - 1) / kBlock;
  const dim3 grid(q_blocks, p.heads, p.batch);
  const dim3 grid2((q_blocks + 1) / 2, p.heads, p.batch);
  switch (v) {
    case WgmmaVariant::Serial:
      return launch_kernel(flash_fwd_wgmma_kernel<D, T>, grid, kThreads,
                           wgmma_fwd_smem_bytes<D>(max_list), p, tune, s);
    case WgmmaVariant::Overlap2:
      return launch_overlap<D, T, 2, 1, kLoadCpAsync>(grid, max_list, p, tune, s);
    case WgmmaVariant::Dense2Wg:
      return launch_overlap<D, T, 3, 2, kLoadCpAsync>(grid2, 0, p, tune, s);
    case WgmmaVariant::Overlap3Tma:
      return launch_overlap<D, T, 3, 1, kLoadTma>(grid, max_list, p, tune, s);
    case WgmmaVariant::Dense2WgTma:
      return launch_overlap<D, T, 3, 2, kLoadTma>(grid2, 0, p, tune, s);
    case WgmmaVariant::Overlap3Ws:
      return launch_overlap<D, T, 3, 1, kLoadTmaProducer>(grid, max_list, p, tune, s);
    case WgmmaVariant::Dense2WgWs:
      return launch_overlap<D, T, 3, 2, kLoadTmaProducer>(grid2, 0, p, tune, s);
    case WgmmaVariant::Dense2WgPp:
      return launch_overlap<D, T, 3, 2, kLoadTmaPingpong>(grid2, 0, p, tune, s);
    default:
      return launch_overlap<D, T, 3, 1, kLoadCpAsync>(grid, max_list, p, tune, s);
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
    case WgmmaVariant::Overlap3Tma: return "overlap3_tma";
    case WgmmaVariant::Dense2WgTma: return "dense2wg_tma";
    case WgmmaVariant::Overlap3Ws: return "overlap3_ws";
    case WgmmaVariant::Dense2WgWs: return "dense2wg_ws";
    case WgmmaVariant::Dense2WgPp: return "dense2wg_pp";
  }
  return "?";
}

namespace {

// VIDGRAPH_WGMMA_VARIANT (read once): the variant Auto stands for; unset or "auto" = the default.
// A dense-only variant given a block list runs its one-warpgroup form (overlap3[_tma]).
bool env_variant(WgmmaVariant* out) {
  static const std::pair<bool, WgmmaVariant> parsed = [] {
    const char* env = std::getenv("VIDGRAPH_WGMMA_VARIANT");
    const std::string want = env != nullptr ? env : "auto";
    for (WgmmaVariant v : {WgmmaVariant::Auto, WgmmaVariant::Serial, WgmmaVariant::Overlap2,
                           WgmmaVariant::Overlap3, WgmmaVariant::Dense2Wg,
                           WgmmaVariant::Overlap3Tma, WgmmaVariant::Dense2WgTma,
                           WgmmaVariant::Overlap3Ws, WgmmaVariant::Dense2WgWs,
                           WgmmaVariant::Dense2WgPp})
      if (want == wgmma_variant_name(v)) return std::make_pair(true, v);
    return std::make_pair(false, WgmmaVariant::Auto);
  }();
  *out = parsed.second;
  return parsed.first;
}

}  // namespace

Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t s, WgmmaVariant v) {
  const bool dense = p.q2k.index == nullptr;
  if (v == WgmmaVariant::Auto) {
    VG_REQUIRE(env_variant(&v),
               "flash_forward (wgmma): VIDGRAPH_WGMMA_VARIANT must be one of auto, serial, "
               "overlap2, overlap3, dense2wg, overlap3_tma, dense2wg_tma, overlap3_ws, "
               "dense2wg_ws, dense2wg_pp.");
    // The H200's fastest (hopper_check.sh, this repository's tests/bench/results/NOTES.md): a
    // producer warp with TMA loads; two consumer warpgroups sharing K/V when dense.
    if (v == WgmmaVariant::Auto) v = dense ? WgmmaVariant::Dense2WgWs : WgmmaVariant::Overlap3Ws;
    if (!dense && v == WgmmaVariant::Dense2Wg) v = WgmmaVariant::Overlap3;
    if (!dense && v == WgmmaVariant::Dense2WgTma) v = WgmmaVariant::Overlap3Tma;
    if (!dense && (v == WgmmaVariant::Dense2WgWs || v == WgmmaVariant::Dense2WgPp))
      v = WgmmaVariant::Overlap3Ws;
  }
  VG_REQUIRE((v != WgmmaVariant::Dense2Wg && v != WgmmaVariant::Dense2WgTma &&
              v != WgmmaVariant::Dense2WgWs && v != WgmmaVariant::Dense2WgPp) ||
                 dense,
             "flash_forward (wgmma): the two-warpgroup variant runs dense attention only; pass "
             "no block list or pick another variant.");
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_typed<64, Bf16>(p, tune, s, v) : launch_typed<64, Fp16>(p, tune, s, v);
  return bf16 ? launch_typed<128, Bf16>(p, tune, s, v) : launch_typed<128, Fp16>(p, tune, s, v);
}

}  // namespace vidgraph::kernels::flash
