#include "models/sampling/flow_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <ATen/TensorOperators.h>

namespace vidgraph::sampling {

void FlowSolver::check_step() const {
  if (step_index_ >= schedule_.steps()) {
    throw std::logic_error("Flow solver stepped past the end of its " + std::to_string(schedule_.steps()) +
                           "-step schedule.");
  }
}

at::Tensor FlowEulerSolver::step(const at::Tensor& velocity, const at::Tensor& sample) {
  check_step();
  const double ds = schedule_.sigmas[step_index_ + 1] - schedule_.sigmas[step_index_];
  ++step_index_;
  return sample + velocity.to(sample.scalar_type()) * ds;
}

double FlowUniPCSolver::lambda(int index) const {
  const double sigma = schedule_.sigmas[index];
  if (sigma <= 0.0) {
    return std::numeric_limits<double>::infinity();
  }
  return std::log(1.0 - sigma) - std::log(sigma);
}

// UniP from sigmas[step_index_] to sigmas[step_index_ + 1]; m_last_ is the x0 prediction at x.
at::Tensor FlowUniPCSolver::predict(const at::Tensor& x, int order) const {
  const int i = step_index_;
  const double sigma_t = schedule_.sigmas[i + 1], sigma_s0 = schedule_.sigmas[i];
  const double alpha_t = 1.0 - sigma_t;
  const double lambda_s0 = lambda(i);
  if (sigma_t <= 0.0) {
    // lambda_t = +inf: h_phi_1 = expm1(-inf) = -1 and sigma_t / sigma_s0 = 0, so x_t = x0
    // (the last step always runs at order 1: lower_order_final).
    return m_last_.clone();
  }
  const double h = lambda(i + 1) - lambda_s0;
  const double h_phi_1 = std::expm1(-h);
  const double b_h = std::expm1(-h);
  at::Tensor x_t = x * (sigma_t / sigma_s0) - m_last_ * (alpha_t * h_phi_1);
  if (order == 2) {
    const double rk = (lambda(i - 1) - lambda_s0) / h;
    at::Tensor d1 = (m_prev_ - m_last_) / rk;
    x_t = x_t - d1 * (alpha_t * b_h * 0.5);  // rhos_p = [0.5] for order 2
  }
  return x_t;
}

// UniC at the start of a step: refines the sample the previous predictor produced, using the new
// x0 prediction `model_t` at it. Uses sigmas[step_index_ - 1] -> sigmas[step_index_].
at::Tensor FlowUniPCSolver::correct(const at::Tensor& model_t, int order) const {
  const int i = step_index_;
  const double sigma_t = schedule_.sigmas[i], sigma_s0 = schedule_.sigmas[i - 1];
  const double alpha_t = 1.0 - sigma_t;
  const double lambda_s0 = lambda(i - 1);
  const double h = lambda(i) - lambda_s0;
  const double hh = -h;
  const double h_phi_1 = std::expm1(hh);
  const double b_h = std::expm1(hh);
  at::Tensor x_t = last_sample_ * (sigma_t / sigma_s0) - m_last_ * (alpha_t * h_phi_1);
  at::Tensor d1_t = model_t - m_last_;
  if (order == 1) {
    return x_t - d1_t * (alpha_t * b_h * 0.5);  // rhos_c = [0.5]
  }
  // Order 2: solve [[1, 1], [rk, 1]] rho = b with b_k = h_phi_k * k! / B_h.
  const double rk = (lambda(i - 2) - lambda_s0) / h;
  double h_phi_k = h_phi_1 / hh - 1.0;
  const double b0 = h_phi_k / b_h;
  h_phi_k = h_phi_k / hh - 0.5;
  const double b1 = h_phi_k * 2.0 / b_h;
  const double rho0 = (b0 - b1) / (1.0 - rk);
  const double rho1 = b0 - rho0;
  at::Tensor d1 = (m_prev_ - m_last_) / rk;
  return x_t - (d1 * rho0 + d1_t * rho1) * (alpha_t * b_h);
}

at::Tensor FlowUniPCSolver::step(const at::Tensor& velocity, const at::Tensor& sample) {
  check_step();
  const int i = step_index_;
  at::Tensor x = sample;
  at::Tensor model_t = sample - velocity.to(sample.scalar_type()) * schedule_.sigmas[i];  // x0
  if (i > 0 && last_sample_.defined()) {
    x = correct(model_t, last_order_);
  }
  m_prev_ = m_last_;
  m_last_ = model_t;
  const int remaining = schedule_.steps() - i;
  const int order = std::min({2, remaining, lower_order_nums_ + 1});
  last_sample_ = x;
  at::Tensor next = predict(x, order);
  last_order_ = order;
  lower_order_nums_ = std::min(lower_order_nums_ + 1, 2);
  ++step_index_;
  return next;
}

}  // namespace vidgraph::sampling
