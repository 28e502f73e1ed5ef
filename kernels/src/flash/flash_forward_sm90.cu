// Host side of the Hopper (sm_90a) forward: shared-memory sizing, the TMA tensor maps
// (sm90_host.h) and dispatch over dense / listed, head dim and dtype. Instances:
// {two warpgroups (dense), one warpgroup (lists)} x D in {64, 128} x {bf16, fp16}. Compiled for
// every CUDA target; only the sm_90a device pass holds wgmma code (other passes hold a trapping
// stub that hopper_kernels_available() keeps from being launched).
#include "../common/check.h"
#include "flash_forward_sm90.h"
#include "flash_fwd_wgmma_kernel.h"
#include "sm90_host.h"

#include <string>

namespace vidgraph::kernels::flash {
namespace {

Status make_maps(wgmma::TmaMaps* m, const FlashForwardParams& p) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  const char* who = "flash_forward (wgmma)";
  Status st = make_tensor_map(&m->q, p.q, p.batch, p.seq_q, p.heads, p.head_dim, bf16, who, "q",
                              "fwd_wgmma");
  if (st == Status::Ok)
    st = make_tensor_map(&m->k, p.k, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, who, "k",
                         "fwd_wgmma");
  if (st == Status::Ok)
    st = make_tensor_map(&m->v, p.v, p.batch, p.seq_kv, p.heads, p.head_dim, bf16, who, "v",
                         "fwd_wgmma");
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
  const Status st_smem = detail::allow_shared_memory(kernel, smem, "flash_forward (wgmma)",
                                                     "Turn the tuning row's fwd_wgmma off.");
  if (st_smem != Status::Ok) return st_smem;
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
