// Host launcher of the block-sparse FlashAttention backward: delta pre-pass, then the dQ kernel
// over query→key lists and the dK/dV kernel over key→query lists, all on one stream.
// Instances: D ∈ {64, 128} × {bf16, fp16} (dQ kernel also × {Q/dO in registers, in shared memory}).
// On NVIDIA, tuning.bwd_wgmma sends sm_90 devices running sm_90a code to the Hopper dQ and dK/dV
// kernels (flash_backward_sm90.cu) after the same delta pre-pass.
#include "../common/check.h"
#include "flash_bwd_kernels.h"
#include "flash_launch_checks.h"
#if defined(VG_PLATFORM_CUDA)
#include "flash_backward_sm90.h"
#include "sm90_host.h"
#endif

namespace vidgraph::kernels {
namespace {

template <int D, typename T>
Status launch_backward(const FlashBackwardParams& p, const AttentionTuning& tune, vgStream_t s) {
  const int64_t rows = int64_t(p.batch) * p.seq_q * p.heads;
  const int64_t delta_blocks = (rows * (D / 8) + 255) / 256;
  flash::flash_bwd_delta_kernel<D, T><<<dim3(unsigned(delta_blocks)), 256, 0, s>>>(p);
  VG_CHECK_LAUNCH("flash_backward (delta)");
#if defined(VG_PLATFORM_CUDA)
  if (tune.bwd_wgmma && flash::hopper_kernels_available())
    return flash::launch_backward_wgmma(p, tune, s);
#endif

  const int n_qb = (p.seq_q + flash::kBlock - 1) / flash::kBlock;
  const int n_kb = (p.seq_kv + flash::kBlock - 1) / flash::kBlock;
  const int dq_list = (p.q2k.index != nullptr && tune.index_in_shared) ? p.q2k.max_len : 0;
  const size_t dq_smem = flash::bwd_dq_smem_bytes<D>(tune.bwd_stages, dq_list);
  auto dq_kernel = tune.bwd_q_in_shared ? flash::flash_bwd_dq_kernel<D, T, true>
                                        : flash::flash_bwd_dq_kernel<D, T, false>;
  Status st = detail::allow_shared_memory(dq_kernel, dq_smem, "flash_backward (dQ)",
                                          "Use one stage (tuning bwd_stages).");
  if (st != Status::Ok) return st;
  dq_kernel<<<dim3(n_qb, p.heads, p.batch), flash::kThreads, dq_smem, s>>>(p, tune);
  VG_CHECK_LAUNCH("flash_backward (dQ)");

  const int kv_list = (p.k2q.index != nullptr && tune.index_in_shared) ? p.k2q.max_len : 0;
  const size_t kv_smem = flash::bwd_dkdv_smem_bytes<D>(tune.bwd_stages, kv_list);
  auto kv_kernel = flash::flash_bwd_dkdv_kernel<D, T>;
  st = detail::allow_shared_memory(kv_kernel, kv_smem, "flash_backward (dK/dV)",
                                    "Use one stage (tuning bwd_stages).");
  if (st != Status::Ok) return st;
  kv_kernel<<<dim3(n_kb, p.heads, p.batch), flash::kThreads, kv_smem, s>>>(p, tune);
  VG_CHECK_LAUNCH("flash_backward (dK/dV)");
  return Status::Ok;
}

}  // namespace

Status flash_backward(const FlashBackwardParams& p, void* stream) {
  const Status st = detail::check_common(
      p.dtype, p.batch, p.heads, p.seq_q, p.seq_kv, p.head_dim,
      {&p.q, &p.k, &p.v, &p.o, &p.dout, &p.dq, &p.dk, &p.dv}, "flash_backward");
  if (st != Status::Ok) return st;
  VG_REQUIRE(p.lse != nullptr && p.delta != nullptr,
             "flash_backward: the lse input and the delta workspace must be given.");
  VG_REQUIRE((p.q2k.index == nullptr) == (p.k2q.index == nullptr),
             "flash_backward: give both block lists (q2k and k2q) or neither.");
  VG_REQUIRE(p.q2k.index == nullptr || (p.q2k.max_len > 0 && p.k2q.max_len > 0),
             "flash_backward: block lists need max_len > 0.");
  const AttentionTuning tune = detail::resolve_tuning(p.tuning);
  VG_REQUIRE(tune.bwd_stages == 1 || tune.bwd_stages == 2,
             "flash_backward: tuning.bwd_stages must be 1 or 2.");
  auto s = static_cast<vgStream_t>(stream);
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_backward<64, Bf16>(p, tune, s) : launch_backward<64, Fp16>(p, tune, s);
  return bf16 ? launch_backward<128, Bf16>(p, tune, s) : launch_backward<128, Fp16>(p, tune, s);
}

}  // namespace vidgraph::kernels
