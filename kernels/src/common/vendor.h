// Portability header: the one place that knows whether we build with hipcc for AMD GPUs or with
// nvcc for NVIDIA GPUs. Kernels include this and never a vendor runtime header directly.
//
// Contract:
//  - HIP (__HIP_PLATFORM_AMD__ or hipcc): includes <hip/hip_runtime.h>; the vg* names below are the
//    HIP runtime functions.
//  - CUDA (__CUDACC__ without HIP): includes <cuda_runtime.h>; the vg* names map 1:1 to cuda*
//    (semantics as in the official HIP-on-NVIDIA mapping). Only names we call are aliased.
//  - Feature macros the kernels test (never raw arch numbers):
//      VG_NVIDIA_MMA   mma.sync m16n8k16 + ldmatrix + cp.async (sm_80 and later), device pass only
//      VG_NVIDIA_WGMMA wgmma.mma_async + fence.proxy.async (sm_90a device pass only: the arch-specific
//                      feature set; plain sm_90 and every other pass never see those instructions)
//      VG_AMD_MFMA     v_mfma_f32_16x16x16 bf16/f16 (gfx90a, gfx940 and later), device pass only
//    and the constexpr warp size kWarpSize (32 on NVIDIA, 64 on CDNA). VG_SHFL_XOR and VG_BALLOT
//    (a uint64_t with one bit per lane) act on the whole warp; VG_SYNC_WARP() orders its
//    shared-memory accesses.
#pragma once

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#define VG_PLATFORM_HIP 1
#include <hip/hip_runtime.h>
using vgStream_t = hipStream_t;
using vgError_t = hipError_t;
#define vgSuccess hipSuccess
#define vgGetLastError hipGetLastError
#define vgGetErrorString hipGetErrorString
#define vgFuncSetAttribute(f, a, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), a, v)
#define vgFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define vgMemsetAsync hipMemsetAsync
#define VG_SHFL_XOR(v, m) __shfl_xor((v), (m))
#define VG_BALLOT(pred) uint64_t(__ballot(pred))
#define VG_SYNC_WARP()                                        \
  do {                                                        \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");    \
    __builtin_amdgcn_wave_barrier();                          \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");    \
  } while (0)
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || \
    defined(__gfx950__)
#define VG_AMD_MFMA 1
#endif
namespace vidgraph::kernels {
constexpr int kWarpSize = 64;
}  // namespace vidgraph::kernels

#elif defined(__CUDACC__)
#define VG_PLATFORM_CUDA 1
#include <cuda_runtime.h>
using vgStream_t = cudaStream_t;
using vgError_t = cudaError_t;
#define vgSuccess cudaSuccess
#define vgGetLastError cudaGetLastError
#define vgGetErrorString cudaGetErrorString
#define vgFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)
#define vgFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define vgMemsetAsync cudaMemsetAsync
#define VG_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#define VG_BALLOT(pred) uint64_t(__ballot_sync(0xffffffffu, (pred)))
#define VG_SYNC_WARP() __syncwarp()
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define VG_NVIDIA_MMA 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define VG_NVIDIA_WGMMA 1
#endif
namespace vidgraph::kernels {
constexpr int kWarpSize = 32;
}  // namespace vidgraph::kernels

#else
#error "kernels/ must be compiled by hipcc (AMD) or nvcc (NVIDIA)."
#endif

#define VG_DEVICE __device__ __forceinline__
#define VG_HOST_DEVICE __host__ __device__
