// Implements dmd_solver.h.
#include "models/sampling/dmd_solver.h"

#include <stdexcept>
#include <string>

#include <ATen/TensorOperators.h>
#include <ATen/ops/randn.h>

namespace vidgraph::sampling {

FlowSchedule dmd_schedule(const std::vector<double>& timesteps, int num_train_timesteps) {
  if (timesteps.empty()) {
    throw std::invalid_argument("The DMD step list is empty; give timesteps such as 1000,757,522.");
  }
  std::vector<double> sigmas;
  for (size_t i = 0; i < timesteps.size(); ++i) {
    const double t = timesteps[i];
    if (!(t > 0.0 && t <= num_train_timesteps) || (i > 0 && !(t < timesteps[i - 1]))) {
      throw std::invalid_argument("DMD timesteps must lie in (0, " + std::to_string(num_train_timesteps) +
                                  "] and strictly decrease; value " + std::to_string(i + 1) + " is " +
                                  std::to_string(t) + ".");
    }
    sigmas.push_back(t / num_train_timesteps);
  }
  sigmas.push_back(0.0);
  FlowSchedule s;
  s.sigmas = std::move(sigmas);
  s.timesteps = timesteps;
  return s;
}

FlowDmdSolver::FlowDmdSolver(FlowSchedule schedule, at::Generator noise)
    : FlowSolver(std::move(schedule)), noise_(std::move(noise)) {}

at::Tensor FlowDmdSolver::step(const at::Tensor& velocity, const at::Tensor& sample) {
  check_step();
  const double sigma = schedule_.sigmas[step_index_];
  const double sigma_next = schedule_.sigmas[step_index_ + 1];
  ++step_index_;
  at::Tensor x0 = sample - velocity.to(sample.scalar_type()) * sigma;
  if (sigma_next == 0.0) {
    return x0;
  }
  const at::Tensor noise = at::randn(sample.sizes(), noise_, at::TensorOptions().dtype(at::kFloat))
                               .to(sample.device(), sample.scalar_type());
  return x0 * (1.0 - sigma_next) + noise * sigma_next;
}

}  // namespace vidgraph::sampling
