// The Hopper (sm_90a, wgmma) forward launcher, called by flash_forward() when the tuning row asks
// for it (AttentionTuning::fwd_wgmma). NVIDIA builds only; the HIP build neither compiles
// flash_forward_sm90.cu nor includes this header.
#pragma once

#include <string>

#include "../common/vendor.h"
#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels::flash {

// The Hopper forward's kernel variants (the device check times them side by side):
//  Serial    one warpgroup per 64-row query block, each MMA batch waited for before the softmax,
//            2 K/V stages (flash_fwd_wgmma_kernel.h).
//  Overlap2  one warpgroup; S(it) = Q·K(it)ᵀ and O += P(it-1)·V(it-1) issued together, the softmax
//            of S(it) runs while P·V does; 2 K/V stages, copies one block ahead
//            (flash_fwd_wgmma_overlap_kernel.h).
//  Overlap3  as Overlap2 with 3 K/V stages, copies two blocks ahead.
//  Dense2Wg  dense only: two warpgroups (two query blocks) per CTA share each K/V tile, each
//            overlapped as Overlap3. A block list gives InvalidArgument.
//  Overlap3Tma, Dense2WgTma  as Overlap3 / Dense2Wg, but one thread loads the tiles with TMA
//            (cp.async.bulk.tensor, tensor maps made on the host per call) and the warps wait on
//            mbarriers instead of their own cp.async groups. Unsupported (an error, not a
//            fallback) when a view's base or strides are not 16-byte aligned.
//  Overlap3Ws, Dense2WgWs  as the Tma pair, with a producer warp (warp specialisation): one
//            more warp issues the TMA loads, consumers release stages through mbarriers and take
//            no block barrier in the loop.
//  Dense2WgPp  Dense2WgWs with ping-pong: the two warpgroups take turns issuing MMAs (named
//            barriers), so one's softmax runs beside the other's MMAs (dense only).
//  Auto      what flash_forward runs: Dense2Wg without a list, Overlap3 with one, unless the
//            environment variable VIDGRAPH_WGMMA_VARIANT (read once) names another variant
//            (serial, overlap2, overlap3, dense2wg, overlap3_tma, dense2wg_tma, overlap3_ws,
//            dense2wg_ws, dense2wg_pp; a dense-only one given a list runs its overlap3 form).
//            Any other value is an error.
// Every variant gives the same bits (the same MMAs and softmax operations in the same order).
enum class WgmmaVariant {
  Auto,
  Serial,
  Overlap2,
  Overlap3,
  Dense2Wg,
  Overlap3Tma,
  Dense2WgTma,
  Overlap3Ws,
  Dense2WgWs,
  Dense2WgPp
};
const char* wgmma_variant_name(WgmmaVariant v);

// True when the current device is sm_90 and this binary carries sm_90a code for the kernel.
bool wgmma_forward_available(std::string* why = nullptr);

// Launches the wgmma forward (arguments already checked by flash_forward; p.o, p.lse set).
// D 64 or 128.
Status launch_forward_wgmma(const FlashForwardParams& p, const AttentionTuning& tune,
                            vgStream_t stream, WgmmaVariant variant = WgmmaVariant::Auto);

}  // namespace vidgraph::kernels::flash
