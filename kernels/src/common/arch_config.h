// Tuning knobs of the attention kernels, one row per architecture family. Knobs never change
// results, only speed. Rows are chosen on the host from the device's capability
// (config_for_device); untuned NVIDIA archs fall back to the Ampere row. The values were chosen
// by `vidgraph-attention bench` on the machines named in each row's comment (see
// tests/bench/results/); rows for hardware nobody here can run are the seed work's settings.
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels {

// NVIDIA sm_90 (H100/H200) on the mma.sync path. Measured on an H200 (tests/bench/results/
// h200-2026-11-29-32d32e4-sweep.json, Wan2.2-5B shape): one stage runs 3 CTAs/SM (registers bind)
// against 2 with two stages (shared memory binds): full fwd 27.7 vs 50.0 ms, bwd 85.2 vs 128.8 ms;
// evict-first K/V cost 3-5 %; staging the list in shared memory changed nothing measurable.
constexpr AttentionTuning kTuningHopper{1, 1, false, true, false, false};
// NVIDIA sm_80/sm_86/sm_89: not measured here; takes the Hopper row (same occupancy argument:
// 164 KB of shared memory on A100 fits 1 CTA with two D=128 stages, 3 with one).
constexpr AttentionTuning kTuningAmpere{1, 1, false, true, false, false};
// AMD CDNA2/CDNA3 (gfx90a, gfx94x): one stage (two fused GEMMs), evict-first streamed K/V.
constexpr AttentionTuning kTuningCdna{1, 1, true, true, true, true};

static_assert(kTuningAmpere.fwd_stages >= 1 && kTuningAmpere.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningHopper.fwd_stages >= 1 && kTuningHopper.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningCdna.bwd_stages >= 1 && kTuningCdna.bwd_stages <= 2, "stages 1..2");

}  // namespace vidgraph::kernels
