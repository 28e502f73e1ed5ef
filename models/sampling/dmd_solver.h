// DMD few-step sampling (FastVideo's DmdDenoisingStage, "sde" sample type), as a solver of the
// sampling loop: per step the model's velocity v at sigma gives the clean prediction
// x0 = x - sigma * v; the next sample is x0 re-noised with fresh noise at the next sigma,
// x_next = (1 - sigma_next) * x0 + sigma_next * noise; the last step (sigma_next = 0) returns x0.
//
// The step list holds timesteps out of 1000 that the distilled model was trained at; sigma = t / 1000
// and the DiT receives t itself (FastVideo reads FastWan's lists as scheduler-space: its test of
// FastWan2_2_TI2V_5B_Config asserts timesteps [1000, 757, 522] and sigmas [1, 0.757, 0.522, 0]).
// The fresh noise is drawn from the generator that made the initial noise, continuing its stream
// (FastVideo draws it from the run's generator the same way), so a seed fixes every step.
#pragma once

#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "models/sampling/flow_solver.h"

namespace vidgraph::sampling {

// FastWan2.2-TI2V-5B's steps: `dmd_denoising_steps` of FastWan2_2_TI2V_5B_Config in FastVideo's
// fastvideo/configs/pipelines/wan.py (flow_shift 5, which these scheduler-space values already include).
inline const std::vector<double> kFastWan22DmdTimesteps = {1000.0, 757.0, 522.0};

// sigmas = t / num_train_timesteps + [0], timesteps = t. Throws std::invalid_argument unless the
// list is non-empty, strictly decreasing and within (0, num_train_timesteps].
FlowSchedule dmd_schedule(const std::vector<double>& timesteps, int num_train_timesteps = 1000);

class FlowDmdSolver : public FlowSolver {
 public:
  // `noise` is a CPU generator; each re-noise draws fp32 N(0, 1) of the sample's shape from it.
  FlowDmdSolver(FlowSchedule schedule, at::Generator noise);
  at::Tensor step(const at::Tensor& velocity, const at::Tensor& sample) override;

 private:
  at::Generator noise_;
};

}  // namespace vidgraph::sampling
