#include <algorithm>
#include <cmath>

#include "models/train/trainer_parts.h"

namespace vidgraph::train {

double sparsity_at(const SparsitySchedule& schedule, int step) {
  if (schedule.steps <= 0) {
    return schedule.target;
  }
  const double progress = static_cast<double>(std::min(step - 1, schedule.steps)) / schedule.steps;
  return schedule.start + (schedule.target - schedule.start) * progress;
}

double learning_rate_at(const TrainOptions& options, int step) {
  if (step <= options.warmup_steps) {
    return options.lr * step / options.warmup_steps;  // linear warm-up: lr/warmup at step 1, lr at the end
  }
  if (options.lr_schedule == "cosine") {
    const int span = options.steps - options.warmup_steps;
    // Full lr at the first step after the warm-up, decaying towards 0 (reached one step past the end).
    const double progress = static_cast<double>(step - 1 - options.warmup_steps) / std::max(1, span);
    return options.lr * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  return options.lr;
}

}  // namespace vidgraph::train
