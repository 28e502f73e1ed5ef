// Tuning knobs of the attention kernels, one row per architecture family. Knobs never change
// results, only speed. Rows are chosen on the host from the device's capability
// (config_for_device); untuned NVIDIA archs fall back to the Ampere row. The values were chosen
// by `vidgraph-attention bench` on the machines named in each row's comment (see
// tests/bench/results/); rows for hardware nobody here can run are the seed work's settings.
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels {

// NVIDIA sm_90 (H100/H200) on the mma.sync path: the winner of the H200 sweep
// (tests/bench/results/h200-2026-11-29-9f9b18c-sweep.json; NOTES.md there): one stage with
// register-lean fwd/dQ kernels (4 and 3 CTAs/SM) gave full fwd 44.7 ms against 47.1 (two stages)
// and 49.5 (one stage, Q in registers: 2 CTAs/SM); evict-first cost 3-6 %; list staging ~0.
// fwd_wgmma: the sm_90a wgmma forward (producer-warp TMA kernels) — same bits as mma.sync on
// every case of tests/bench/hopper_check.sh, and at the Wan2.2-5B shape (B1 H24 S27280 D128 bf16)
// dense 18.3 ms against 42.1 (502 vs 218 TF/s), block-sparse 0.875 2.66 ms against 5.56.
// bwd_wgmma: the sm_90a wgmma backward (dQ and dK/dV, TMA loads) — same bits as mma.sync on every
// case of the check; at the same shape dense 62.9 ms against 123.2 (365 vs 186 TF/s counted as
// 2.5x the forward's FLOPs), block-sparse 0.875 8.35 ms against 16.0.
constexpr AttentionTuning kTuningHopper{1, 1, false, true, true, true, true, true};
// NVIDIA sm_80/sm_86/sm_89: not measured here; takes the Hopper row (same occupancy argument).
constexpr AttentionTuning kTuningAmpere{1, 1, false, true, true, true, false, false};
// AMD CDNA2/CDNA3 (gfx90a, gfx94x): one stage (two fused GEMMs), evict-first streamed K/V.
constexpr AttentionTuning kTuningCdna{1, 1, true, true, true, true, false, false};

static_assert(kTuningAmpere.fwd_stages >= 1 && kTuningAmpere.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningHopper.fwd_stages >= 1 && kTuningHopper.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningCdna.bwd_stages >= 1 && kTuningCdna.bwd_stages <= 2, "stages 1..2");

}  // namespace vidgraph::kernels
