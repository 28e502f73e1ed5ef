#include "models/sampling/flow_schedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace vidgraph::sampling {
namespace {

void check_args(int steps, double shift) {
  if (steps < 1) {
    throw std::invalid_argument("A flow schedule needs at least 1 step, got " + std::to_string(steps) + ".");
  }
  if (!(shift > 0.0)) {
    throw std::invalid_argument("The flow shift must be positive, got " + std::to_string(shift) + ".");
  }
}

// linspace(start, stop, n + 1)[:-1] as numpy computes it.
std::vector<double> linspace_head(double start, double stop, int n) {
  std::vector<double> out(n);
  const double step = (stop - start) / n;
  for (int i = 0; i < n; ++i) {
    out[i] = start + i * step;
  }
  return out;
}

}  // namespace

double flow_shift(double sigma, double shift) {
  return shift * sigma / (1.0 + (shift - 1.0) * sigma);
}

FlowSchedule flow_unipc_schedule(int steps, double shift, int num_train_timesteps) {
  check_args(steps, shift);
  // sigma_max: the scheduler's training sigmas are 1 - linspace(1, 1/T, T) reversed, in fp32.
  const double sigma_max = static_cast<double>(static_cast<float>(1.0 - 1.0 / num_train_timesteps));
  FlowSchedule s;
  for (double v : linspace_head(sigma_max, 0.0, steps)) {
    const double shifted = flow_shift(v, shift);
    s.timesteps.push_back(std::trunc(shifted * num_train_timesteps));
    s.sigmas.push_back(static_cast<double>(static_cast<float>(shifted)));
  }
  s.sigmas.push_back(0.0);
  return s;
}

FlowSchedule flow_euler_schedule(int steps, double shift, int num_train_timesteps) {
  check_args(steps, shift);
  FlowSchedule s;
  for (double v : linspace_head(1.0, 0.0, steps)) {
    const double shifted = flow_shift(v, shift);
    s.sigmas.push_back(shifted);
    s.timesteps.push_back(shifted * num_train_timesteps);
  }
  s.sigmas.push_back(0.0);
  return s;
}

FlowSchedule flow_schedule_from_sigmas(const std::vector<double>& sigmas, int num_train_timesteps) {
  if (sigmas.size() < 2 || sigmas.back() != 0.0) {
    throw std::invalid_argument("Custom sigmas need at least 2 values and must end with 0.");
  }
  for (size_t i = 0; i < sigmas.size(); ++i) {
    if (sigmas[i] < 0.0 || sigmas[i] > 1.0 || (i > 0 && !(sigmas[i] < sigmas[i - 1]))) {
      throw std::invalid_argument("Custom sigmas must lie in [0, 1] and strictly decrease; value " + std::to_string(i) +
                                  " is " + std::to_string(sigmas[i]) + ".");
    }
  }
  FlowSchedule s;
  s.sigmas = sigmas;
  for (size_t i = 0; i + 1 < sigmas.size(); ++i) {
    s.timesteps.push_back(sigmas[i] * num_train_timesteps);
  }
  return s;
}

}  // namespace vidgraph::sampling
