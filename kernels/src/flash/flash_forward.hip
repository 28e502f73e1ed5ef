// Host launcher of the block-sparse FlashAttention forward: checks, dispatch over head dim and
// dtype, shared-memory sizing. Instances: D ∈ {64, 128} × {bf16, fp16} × {Q in registers, Q in
// shared memory}. On NVIDIA, tuning.fwd_wgmma sends sm_90 devices running sm_90a code to the
// Hopper kernel (flash_forward_sm90.cu); everything else runs the tile-MMA kernel.
#include "../common/check.h"
#include "flash_fwd_kernel.h"
#include "flash_launch_checks.h"
#if defined(VG_PLATFORM_CUDA)
#include "flash_forward_sm90.h"
#include "sm90_host.h"
#endif

namespace vidgraph::kernels {
namespace {

template <int D, typename T, bool kQShared>
Status launch_variant(const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s) {
  const int max_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const size_t smem = flash::fwd_smem_bytes<D>(tune.fwd_stages, max_list);
  auto kernel = flash::flash_fwd_kernel<D, T, kQShared>;
  const Status st = detail::allow_shared_memory(kernel, smem, "flash_forward",
                                                 "Use one stage (tuning fwd_stages).");
  if (st != Status::Ok) return st;
  const dim3 grid((p.seq_q + flash::kBlock - 1) / flash::kBlock, p.heads, p.batch);
  kernel<<<grid, flash::kThreads, smem, s>>>(p, tune);
  VG_CHECK_LAUNCH("flash_forward");
  return Status::Ok;
}

template <int D, typename T>
Status launch_forward(const FlashForwardParams& p, const AttentionTuning& tune, vgStream_t s) {
  return tune.fwd_q_in_shared ? launch_variant<D, T, true>(p, tune, s)
                              : launch_variant<D, T, false>(p, tune, s);
}

}  // namespace

Status flash_forward(const FlashForwardParams& p, void* stream) {
  const Status st = detail::check_common(p.dtype, p.batch, p.heads, p.seq_q, p.seq_kv,
                                         p.head_dim, {&p.q, &p.k, &p.v, &p.o}, "flash_forward");
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.lse != nullptr, "flash_forward: the lse output pointer is null.");
  VG_REQUIRE(p.q2k.index == nullptr || p.q2k.max_len > 0,
             "flash_forward: a block list needs max_len > 0.");
  const AttentionTuning tune = detail::resolve_tuning(p.tuning);
  VG_REQUIRE(tune.fwd_stages == 1 || tune.fwd_stages == 2,
             "flash_forward: tuning.fwd_stages must be 1 or 2.");
  auto s = static_cast<vgStream_t>(stream);
#if defined(VG_PLATFORM_CUDA)
  if (tune.fwd_wgmma && flash::hopper_kernels_available())
    return flash::launch_forward_wgmma(p, tune, s);
#endif
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_forward<64, Bf16>(p, tune, s) : launch_forward<64, Fp16>(p, tune, s);
  return bf16 ? launch_forward<128, Bf16>(p, tune, s) : launch_forward<128, Fp16>(p, tune, s);
}

}  // namespace vidgraph::kernels
