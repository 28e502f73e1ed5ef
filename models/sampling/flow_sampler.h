// The sampling loop: noise (or a given latent) -> N solver steps with classifier-free guidance ->
// clean latent. Text-to-video, and image-to-video with a clean first latent frame: frame 0 holds
// the encoded image, its timestep is 0 (per-frame timesteps), and it is re-imposed after every
// step (wan/textimage2video.py). Plain callbacks, no engine types.
//
// Latents are [C, F, H, W] fp32 (one video; batch the CFG branches inside the VelocityFn).
// Noise: at::randn from a CPU generator seeded with `seed`, fp32, then moved to the device, so a
// seed gives the same latents on any device. DMD (dmd_solver.h) draws its per-step noise from the
// same generator after the initial noise.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "models/sampling/flow_schedule.h"

namespace vidgraph::sampling {

// The model: x [C, F, H, W] fp32 and per-frame timesteps t [F] fp32 (same device as x) ->
// {v_cond} or, when need_uncond, {v_cond, v_uncond}, each [C, F, H, W].
using VelocityFn = std::function<std::vector<at::Tensor>(const at::Tensor& x, const at::Tensor& t, bool need_uncond)>;

enum class SolverKind { UniPC, Euler, Dmd };

// Wan2.2-A14B's second expert (wan/text2video.py, image2video.py): the steps whose timestep is below
// `boundary` (out of 1000: T2V 875, I2V 900) call `model` with guidance `guide_scale`; the others
// call the model given to flow_sample with FlowSampleOptions::guide_scale. No model: one expert.
struct LowNoiseExpert {
  VelocityFn model;
  double boundary = 875.0;
  double guide_scale = 3.0;
};

struct FlowSampleOptions {
  SolverKind solver = SolverKind::UniPC;
  int steps = 50;
  double shift = 5.0;
  double guide_scale = 5.0;    // 1 = no guidance (one model call per step)
  LowNoiseExpert low_noise;    // optional second expert for the low-noise steps
  std::vector<double> sigmas;  // optional custom schedule (ends in 0); overrides steps/shift
  // Dmd only: the step timesteps out of 1000 (empty = kFastWan22DmdTimesteps); steps/shift unused.
  std::vector<double> dmd_timesteps;
  uint64_t seed = 0;
  std::vector<int64_t> latent_shape;  // [C, F, H, W]
  at::Tensor initial_latent;          // optional [C, F, H, W]: used instead of seeded noise
  at::Tensor first_frame;             // optional [C, 1, H, W]: image-to-video conditioning latent
  c10::Device device = c10::Device(c10::kCPU);
  // Called after each step with (steps done, total steps).
  std::function<void(int, int)> on_step;
  // Called after each step, before on_step, with the clean-latent estimate of that step's model call,
  // x0 = x - sigma * v (guided v; the clean first frame for image-to-video), [C, F, H, W] fp32 on
  // the device: what a live preview shows. Not computed when unset.
  std::function<void(int done, int total, const at::Tensor& x0)> on_denoised;
  // Polled before each step; returning true stops the run with SamplingCancelled.
  std::function<bool()> is_cancelled;
};

class SamplingCancelled : public std::runtime_error {
 public:
  explicit SamplingCancelled(int step)
      : std::runtime_error("Sampling was cancelled before step " + std::to_string(step + 1) + "."), step_(step) {}
  int step() const { return step_; }

 private:
  int step_;
};

// fp32 N(0, 1) noise of `shape` from a CPU generator seeded with `seed`, on `device`.
at::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed, c10::Device device);

// The schedule the options select.
FlowSchedule schedule_for(const FlowSampleOptions& options);

// Runs the loop; returns the final latent [C, F, H, W] fp32 on options.device. Throws
// std::invalid_argument for inconsistent shapes or options, SamplingCancelled on cancellation,
// std::runtime_error naming the step when the latent becomes non-finite (NaN/Inf).
at::Tensor flow_sample(const VelocityFn& model, const FlowSampleOptions& options);

}  // namespace vidgraph::sampling
