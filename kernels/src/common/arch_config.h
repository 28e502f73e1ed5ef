// Tuning knobs of the attention kernels, one row per architecture family. Knobs never change
// results, only speed. Rows are chosen on the host from the device's capability
// (config_for_device); untuned NVIDIA archs fall back to the Ampere row. The values were chosen
// by `vidgraph-attention bench` on the machines named in each row's comment (see
// tests/bench/results/); rows for hardware nobody here can run are the seed work's settings.
#pragma once

#include "vidgraph/kernels/attention_kernels.h"

namespace vidgraph::kernels {

// NVIDIA sm_80/sm_86/sm_89: FA2-style double buffering.
constexpr AttentionTuning kTuningAmpere{2, 2, false, true};
// NVIDIA sm_90 (H100/H200) on the mma.sync path.
constexpr AttentionTuning kTuningHopper{2, 2, false, true};
// AMD CDNA2/CDNA3 (gfx90a, gfx94x): one stage (two fused GEMMs), evict-first streamed K/V.
constexpr AttentionTuning kTuningCdna{1, 1, true, true};

static_assert(kTuningAmpere.fwd_stages >= 1 && kTuningAmpere.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningHopper.fwd_stages >= 1 && kTuningHopper.fwd_stages <= 2, "stages 1..2");
static_assert(kTuningCdna.bwd_stages >= 1 && kTuningCdna.bwd_stages <= 2, "stages 1..2");

}  // namespace vidgraph::kernels
