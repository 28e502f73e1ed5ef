// ComfyUI's sampler settings in Wan Sampler's terms: sampler_name + scheduler → a solver
// (unipc / euler), and a two-stage split (KSamplerAdvanced high-noise steps 0..k, low-noise k..N)
// → Wan Sampler's expert_boundary.
#pragma once

#include <string>
#include <vector>

namespace vidgraph::comfy {

struct SolverChoice {
  std::string scheduler;              // Wan Sampler's `scheduler`: "unipc" or "euler"
  std::vector<std::string> warnings;  // one sentence per setting without an exact equivalent
};

// ComfyUI's "euler" is Vidgraph's Euler; its UniPC samplers (order 3; "uni_pc" bh1, "uni_pc_bh2")
// become Wan's reference UniPC (order 2, bh2) with a warning; other samplers fall back to the nearest
// (Euler for the Euler family and LCM, UniPC otherwise). Only the "simple" scheduler is the shifted
// linear schedule Vidgraph uses.
SolverChoice map_solver(const std::string& sampler_name, const std::string& scheduler);

// The expert boundary (a noise level in (0, 1]) that makes Wan Sampler run steps 0..split-1 on the
// high-noise expert and split..steps-1 on the low-noise one, with the schedule
// sigma(t) = shift·t / (1 + (shift − 1)·t), t = 1 − i/steps: the midpoint of the noise levels of
// steps split − 1 and split. split ≤ 0 gives 1 (all low-noise), split ≥ steps 0.001 (all high-noise).
double boundary_for_split(int split, int steps, double shift);

}  // namespace vidgraph::comfy
