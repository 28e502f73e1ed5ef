// Flow-matching solvers: each step turns the model's velocity at the current sample into the
// sample at the next sigma of its schedule. State (history for multistep) lives in the solver;
// one solver instance serves one sampling run.
//
//   FlowEulerSolver: x_next = x + (sigma_next - sigma) * v.
//   FlowUniPCSolver: UniPC (Wan's FlowUniPCMultistepScheduler): solver order 2, B(h) = expm1(-h)
//     ("bh2"), predicting x0 = x - sigma * v; warm-up at order 1, lower order on the final step,
//     UniC corrector at every step after the first. alpha = 1 - sigma, lambda = log alpha - log sigma.
//     The final sigma 0 gives lambda = +inf; the step then returns the x0 prediction exactly.
// Tensors: v and x of the same shape, any device; arithmetic in x's dtype (fp32 recommended),
// coefficients in double.
#pragma once

#include <ATen/core/Tensor.h>

#include "models/sampling/flow_schedule.h"

namespace vidgraph::sampling {

class FlowSolver {
 public:
  explicit FlowSolver(FlowSchedule schedule) : schedule_(std::move(schedule)) {}
  virtual ~FlowSolver() = default;
  // Advances from sigmas[step_index()] to sigmas[step_index() + 1]. Throws std::logic_error
  // when called more often than the schedule has steps.
  virtual at::Tensor step(const at::Tensor& velocity, const at::Tensor& sample) = 0;
  const FlowSchedule& schedule() const { return schedule_; }
  int step_index() const { return step_index_; }

 protected:
  void check_step() const;
  FlowSchedule schedule_;
  int step_index_ = 0;
};

class FlowEulerSolver : public FlowSolver {
 public:
  using FlowSolver::FlowSolver;
  at::Tensor step(const at::Tensor& velocity, const at::Tensor& sample) override;
};

class FlowUniPCSolver : public FlowSolver {
 public:
  using FlowSolver::FlowSolver;
  at::Tensor step(const at::Tensor& velocity, const at::Tensor& sample) override;

 private:
  double lambda(int index) const;  // log(1 - sigma) - log(sigma); +inf at sigma 0
  at::Tensor predict(const at::Tensor& x, int order) const;
  at::Tensor correct(const at::Tensor& model_t, int order) const;

  at::Tensor m_prev_;       // x0 prediction two evaluations back (order 2 history)
  at::Tensor m_last_;       // x0 prediction of the last evaluation
  at::Tensor last_sample_;  // sample the last predictor started from
  int last_order_ = 0;
  int lower_order_nums_ = 0;
};

}  // namespace vidgraph::sampling
