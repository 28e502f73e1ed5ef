// Host side of the Hopper (sm_90a) backward: the TMA maps of q, k, v and dO (sm90_host.h),
// shared-memory sizing and dispatch over head dim and dtype. Instances: {dQ, dK/dV} x D in
// {64, 128} x {bf16, fp16} (a list or none at run time).
// Only the sm_90a device pass holds wgmma code (flash_forward_sm90.cu explains the stubs).
#include "../common/check.h"
#include "flash_backward_sm90.h"
#include "flash_bwd_wgmma_kernels.h"
#include "sm90_host.h"

#include <string>

namespace vidgraph::kernels::flash {
namespace {

Status make_maps(wgmma::TmaMaps* m, const FlashBackwardParams& p) {
  const bool bf16 = p.dtype == ElementType::BFloat16;
  const char* who = "flash_backward (wgmma)";
  const struct {
    CUtensorMap* map;
    const TensorView& view;
    int seq;
    const char* name;
  } views[] = {{&m->q, p.q, p.seq_q, "q"},
               {&m->k, p.k, p.seq_kv, "k"},
               {&m->v, p.v, p.seq_kv, "v"},
               {&m->dout, p.dout, p.seq_q, "dout"}};
  for (const auto& v : views) {
    const Status st = make_tensor_map(v.map, v.view, p.batch, v.seq, p.heads, p.head_dim, bf16,
                                      who, v.name, "bwd_wgmma");
    if (st != Status::Ok) return st;
  }
  return Status::Ok;
}

// One warpgroup (one 64-row block) per CTA in both kernels.
template <int D, typename T>
Status launch_typed(const FlashBackwardParams& p, const AttentionTuning& tune,
                    const wgmma::TmaMaps& maps, vgStream_t s) {
  const bool staged = p.q2k.index != nullptr && tune.index_in_shared;
  const int n_qb = (p.seq_q + kBlock - 1) / kBlock;
  const int n_kb = (p.seq_kv + kBlock - 1) / kBlock;

  const size_t dq_smem = wgmma_dq_smem_bytes<D>(staged ? p.q2k.max_len : 0);
  auto dq_kernel = flash_bwd_dq_wgmma_kernel<D, T>;
  Status st = detail::allow_shared_memory(dq_kernel, dq_smem, "flash_backward (wgmma dQ)",
                                          "Turn the tuning row's bwd_wgmma off.");
  if (st != Status::Ok) return st;
  dq_kernel<<<dim3(n_qb, p.heads, p.batch), kThreads, dq_smem, s>>>(p, tune, maps);
  VG_CHECK_LAUNCH("flash_backward (wgmma dQ)");

  const size_t kv_smem = wgmma_dkdv_smem_bytes<D>(staged ? p.k2q.max_len : 0);
  auto kv_kernel = flash_bwd_dkdv_wgmma_kernel<D, T>;
  st = detail::allow_shared_memory(kv_kernel, kv_smem, "flash_backward (wgmma dK/dV)",
                                    "Turn the tuning row's bwd_wgmma off.");
  if (st != Status::Ok) return st;
  kv_kernel<<<dim3(n_kb, p.heads, p.batch), kThreads, kv_smem, s>>>(p, tune, maps);
  VG_CHECK_LAUNCH("flash_backward (wgmma dK/dV)");
  return Status::Ok;
}

}  // namespace

Status launch_backward_wgmma(const FlashBackwardParams& p, const AttentionTuning& tune,
                             vgStream_t s) {
  wgmma::TmaMaps maps{};
  const Status st = make_maps(&maps, p);
  if (st != Status::Ok) return st;
  const bool bf16 = p.dtype == ElementType::BFloat16;
  if (p.head_dim == 64)
    return bf16 ? launch_typed<64, Bf16>(p, tune, maps, s) : launch_typed<64, Fp16>(p, tune, maps, s);
  return bf16 ? launch_typed<128, Bf16>(p, tune, maps, s)
              : launch_typed<128, Fp16>(p, tune, maps, s);
}

}  // namespace vidgraph::kernels::flash
