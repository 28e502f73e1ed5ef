// Flow-matching noise schedules: sigma runs from ~1 (noise) to 0 (clean); x_sigma = (1 - sigma) x0
// + sigma * noise, and the model predicts the velocity v = noise - x0.
//
//   flow_unipc_schedule: the official Wan schedule (wan/utils/fm_solvers_unipc.py set_timesteps):
//     s = linspace(sigma_max = fp32(0.999), 0, N + 1)[:-1]; s = shift*s / (1 + (shift-1)*s);
//     sigmas = fp32(s) + [0]; timesteps = trunc(s * 1000) (what the DiT receives).
//   flow_euler_schedule: s = linspace(1, 0, N + 1)[:-1] shifted the same way, sigmas = s + [0],
//     timesteps = s * 1000 (no truncation); for few-step distilled models.
//   flow_schedule_from_sigmas: any decreasing list ending in 0; timesteps = sigma * 1000.
#pragma once

#include <vector>

namespace vidgraph::sampling {

struct FlowSchedule {
  std::vector<double> sigmas;     // N + 1 values, strictly decreasing, the last is 0
  std::vector<double> timesteps;  // N values fed to the model at each step
  int steps() const { return static_cast<int>(timesteps.size()); }
};

// The shift map sigma -> shift*sigma / (1 + (shift-1)*sigma).
double flow_shift(double sigma, double shift);

// Throws std::invalid_argument for steps < 1 or shift <= 0.
FlowSchedule flow_unipc_schedule(int steps, double shift, int num_train_timesteps = 1000);
FlowSchedule flow_euler_schedule(int steps, double shift, int num_train_timesteps = 1000);
// Throws std::invalid_argument unless sigmas has >= 2 values in (0, 1], strictly decreasing, last 0.
FlowSchedule flow_schedule_from_sigmas(const std::vector<double>& sigmas, int num_train_timesteps = 1000);

}  // namespace vidgraph::sampling
