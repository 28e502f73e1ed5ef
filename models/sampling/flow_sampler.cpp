#include "models/sampling/flow_sampler.h"

#include <memory>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include "models/sampling/dmd_solver.h"
#include "models/sampling/flow_solver.h"

namespace vidgraph::sampling {
namespace {

std::string shape_str(at::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

std::vector<int64_t> resolve_shape(const FlowSampleOptions& o) {
  std::vector<int64_t> shape = o.latent_shape;
  if (o.initial_latent.defined()) {
    if (!shape.empty() && shape != o.initial_latent.sizes().vec()) {
      throw std::invalid_argument("The initial latent has shape " + shape_str(o.initial_latent.sizes()) +
                                  " but the latent shape is " + shape_str(shape) + ".");
    }
    shape = o.initial_latent.sizes().vec();
  }
  if (shape.size() != 4) {
    throw std::invalid_argument("The latent shape must be [C, F, H, W], got " + shape_str(shape) + ".");
  }
  for (int64_t d : shape) {
    if (d <= 0) {
      throw std::invalid_argument("The latent shape " + shape_str(shape) + " has an empty dimension.");
    }
  }
  if (o.first_frame.defined()) {
    const auto f = o.first_frame.sizes();
    if (f.size() != 4 || f[0] != shape[0] || f[1] != 1 || f[2] != shape[2] || f[3] != shape[3]) {
      throw std::invalid_argument("The first-frame latent has shape " + shape_str(f) + ", expected [" +
                                  std::to_string(shape[0]) + ", 1, " + std::to_string(shape[2]) + ", " +
                                  std::to_string(shape[3]) + "].");
    }
  }
  return shape;
}

}  // namespace

at::Tensor seeded_noise(const std::vector<int64_t>& shape, uint64_t seed, c10::Device device) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)).to(device);
}

FlowSchedule schedule_for(const FlowSampleOptions& o) {
  if (o.solver == SolverKind::Dmd) {
    return dmd_schedule(o.dmd_timesteps.empty() ? kFastWan22DmdTimesteps : o.dmd_timesteps);
  }
  if (!o.sigmas.empty()) {
    return flow_schedule_from_sigmas(o.sigmas);
  }
  return o.solver == SolverKind::UniPC ? flow_unipc_schedule(o.steps, o.shift) : flow_euler_schedule(o.steps, o.shift);
}

at::Tensor flow_sample(const VelocityFn& model, const FlowSampleOptions& o) {
  c10::NoGradGuard no_grad;
  if (o.low_noise.model && !(o.low_noise.boundary > 0.0 && o.low_noise.boundary <= 1000.0)) {
    throw std::invalid_argument("The expert boundary must be a timestep in (0, 1000]; got " +
                                std::to_string(o.low_noise.boundary) + ".");
  }
  const std::vector<int64_t> shape = resolve_shape(o);
  FlowSchedule schedule = schedule_for(o);
  // One generator per run: the initial noise first (as seeded_noise), then DMD's per-step noise.
  at::Generator gen = at::detail::createCPUGenerator(o.seed);
  std::unique_ptr<FlowSolver> solver;
  if (o.solver == SolverKind::UniPC) {
    solver = std::make_unique<FlowUniPCSolver>(schedule);
  } else if (o.solver == SolverKind::Dmd) {
    solver = std::make_unique<FlowDmdSolver>(schedule, gen);
  } else {
    solver = std::make_unique<FlowEulerSolver>(schedule);
  }
  at::Tensor x = o.initial_latent.defined()
                     ? o.initial_latent.to(o.device, at::kFloat).clone()
                     : at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)).to(o.device);
  const bool i2v = o.first_frame.defined();
  at::Tensor z0 = i2v ? o.first_frame.to(o.device, at::kFloat) : at::Tensor();
  if (i2v) {
    x.narrow(1, 0, 1).copy_(z0);  // latent = (1 - mask) * z + mask * noise
  }
  const int total = schedule.steps();
  for (int i = 0; i < total; ++i) {
    if (o.is_cancelled && o.is_cancelled()) {
      throw SamplingCancelled(i);
    }
    at::Tensor t = at::full({shape[1]}, schedule.timesteps[i], x.options());  // [F]
    if (i2v) {
      t.narrow(0, 0, 1).fill_(0.0);  // the clean first frame is at t = 0
    }
    const bool low = o.low_noise.model && schedule.timesteps[i] < o.low_noise.boundary;
    const double guide_scale = low ? o.low_noise.guide_scale : o.guide_scale;
    const bool guided = guide_scale != 1.0;
    std::vector<at::Tensor> v = (low ? o.low_noise.model : model)(x, t, guided);
    if (v.empty() || (guided && v.size() < 2)) {
      throw std::invalid_argument("The velocity function returned " + std::to_string(v.size()) +
                                  " tensor(s); guidance needs the conditional and unconditional ones.");
    }
    if (v[0].sizes() != x.sizes()) {
      throw std::invalid_argument("The velocity has shape " + shape_str(v[0].sizes()) + ", expected the latent shape " +
                                  shape_str(x.sizes()) + ".");
    }
    at::Tensor vel = v[0].to(at::kFloat);
    if (guided) {
      at::Tensor vu = v[1].to(at::kFloat);
      vel = vu + (vel - vu) * guide_scale;
    }
    at::Tensor x0 = o.on_denoised ? x - vel * schedule.sigmas[i] : at::Tensor();
    x = solver->step(vel, x);
    if (!x.isfinite().all().item<bool>()) {
      throw std::runtime_error("Sampling produced non-finite values at step " + std::to_string(i + 1) + " of " +
                               std::to_string(total) +
                               "; the model overflowed (try bf16 or fp32 weights instead of fp16).");
    }
    if (i2v) {
      x.narrow(1, 0, 1).copy_(z0);
    }
    if (o.on_denoised) {
      if (i2v) x0.narrow(1, 0, 1).copy_(z0);
      o.on_denoised(i + 1, total, x0);
    }
    if (o.on_step) {
      o.on_step(i + 1, total);
    }
  }
  return x;
}

}  // namespace vidgraph::sampling
