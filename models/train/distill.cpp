#include "models/train/distill.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/square.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include "models/sampling/flow_sampler.h"
#include "models/train/block_checkpoint.h"
#include "models/train/distill_parts.h"
#include "models/train/sparse_extras.h"
#include "models/train/train_seed.h"
#include "models/wan/wan_log.h"

namespace vidgraph::train {

namespace {

constexpr uint64_t kDistillSalt = 0xD1571ULL;  // the draws' stream, apart from train()'s
const char* const kStudent = "student";
const char* const kCritic = "critic";

// Per-frame timesteps [F / patch_t] at `t`; image-to-video: frame 0 at 0.
at::Tensor frame_timesteps(int64_t groups, double t, bool image_to_video, c10::Device device) {
  at::Tensor ts = at::full({groups}, t, at::TensorOptions().dtype(at::kFloat));
  if (image_to_video) ts.select(0, 0).fill_(0.0);
  return ts.to(device);
}

// One forward of a single latent [C, F, h, w] -> velocity [C, F, h, w] fp32; `condition` (when
// defined) beside it along channels, as the model samples.
at::Tensor velocity(wan::WanModelImpl& model, const wan::AttentionRun& run, const at::Tensor& x,
                    const at::Tensor& t, const at::Tensor& context, const at::Tensor& condition,
                    bool checkpointing = false) {
  const auto dev = model.device();
  return training_forward(model, with_condition(x.to(dev), condition).unsqueeze(0), t.unsqueeze(0).to(dev),
                          context.to(dev, at::kFloat).unsqueeze(0), run, checkpointing)[0];
}

// x with latent frame 0 replaced by the image latent (out of place: x may carry autograd).
at::Tensor with_first_frame(const at::Tensor& x, const DistillPrompt& p) {
  if (!p.first_frame.defined()) return x;
  const at::Tensor first = p.first_frame.to(x.device(), x.scalar_type());
  return at::cat({first, x.narrow(1, 1, x.size(1) - 1)}, 1);
}

// The latent the student's chain starts from: the noise, or at a first timestep below 1000 (a
// low-noise expert) the prompt's clip noised to it.
at::Tensor chain_start(const DistillDraws& d, const DistillPrompt& p, double sigma) {
  if (sigma >= 1.0) return d.noise;
  return p.clip * (1.0 - sigma) + d.noise * sigma;
}

// The student's clean sample (distill_draws' chain): steps before the exit without autograd, the
// exit step with autograd when `grad` (the caller's grad mode decides).
at::Tensor student_sample(wan::WanModelImpl& model, const wan::AttentionRun& run, const DistillDraws& d,
                          const DistillPrompt& p, const std::vector<double>& timesteps, bool checkpointing) {
  const auto dev = model.device();
  const bool i2v = p.first_frame.defined();
  const int64_t groups = d.noise.size(1) / model.config().patch_size[0];
  at::Tensor x = with_first_frame(chain_start(d, p, timesteps.front() / 1000.0).to(dev), p);
  for (int j = 0; j < d.exit_step; ++j) {
    c10::NoGradGuard no_grad;
    const double sigma = timesteps[j] / 1000.0, next = timesteps[j + 1] / 1000.0;
    const at::Tensor v =
        velocity(model, run, x, frame_timesteps(groups, timesteps[j], i2v, dev), p.context, p.condition);
    const at::Tensor x0 = x - v * sigma;
    x = with_first_frame(x0 * (1.0 - next) + d.step_noises[j].to(dev) * next, p);
  }
  const double t = timesteps[d.exit_step];
  const at::Tensor v =
      velocity(model, run, x, frame_timesteps(groups, t, i2v, dev), p.context, p.condition, checkpointing);
  return with_first_frame(x - v * (t / 1000.0), p);
}

// The loss frames of a latent (frame 0 is the image for image-to-video).
at::Tensor loss_frames(const at::Tensor& x, int64_t first) { return x.narrow(1, first, x.size(1) - first); }

// The teacher's guided Euler sample from the draws' initial noise (regression target), no autograd.
at::Tensor teacher_sample(wan::WanModelImpl& model, AdapterSets& sets, const wan::AttentionRun& full,
                          const DistillDraws& d, const DistillPrompt& p, const DistillOptions& o) {
  c10::NoGradGuard no_grad;
  ActiveAdapters teacher(sets, "");
  sampling::FlowSampleOptions so;
  so.solver = sampling::SolverKind::Euler;
  so.steps = o.regression_steps;
  so.shift = o.shift;
  so.guide_scale = o.guidance;
  so.latent_shape = o.latent_shape;
  so.initial_latent = d.noise;
  so.first_frame = p.first_frame;
  so.device = model.device();
  const auto fn = [&](const at::Tensor& x, const at::Tensor& t, bool need_uncond) {
    std::vector<at::Tensor> out{velocity(model, full, x, t, p.context, p.condition)};
    if (need_uncond) out.push_back(velocity(model, full, x, t, o.negative_context, p.condition));
    return out;
  };
  return sampling::flow_sample(fn, so);
}

void set_requires_grad(const std::vector<Trainable>& trained, bool on) {
  for (const Trainable& t : trained) t.model.requires_grad_(on);
}

// The role's trained tensors: its adapter set's down/up (fp32: their own masters) and `extras`.
DistillRole make_role(const std::vector<std::pair<std::string, wan::WanLinearAdapter>>& adapters,
                      const std::vector<std::pair<std::string, at::Tensor>>& extras, double lr, double weight_decay) {
  DistillRole role;
  for (const auto& [name, a] : adapters) {
    role.trained.push_back({name + ".lora_down", a.down, a.down});
    role.trained.push_back({name + ".lora_up", a.up, a.up});
  }
  for (const auto& [name, t] : extras) {
    at::Tensor master = t.scalar_type() == at::kFloat ? t : t.detach().to(at::kFloat);
    role.trained.push_back({name, t, master});
  }
  std::vector<at::Tensor> masters;
  for (const Trainable& t : role.trained) masters.push_back(t.master);
  role.optimizer = std::make_unique<torch::optim::AdamW>(
      masters, torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  return role;
}

}  // namespace

DistillDraws distill_draws(const DistillOptions& o, size_t prompt_count, int step, int update) {
  const int64_t position = static_cast<int64_t>(step - 1) * (o.critic_updates + 1) + update;
  DistillDraws d;
  d.prompt = SampleOrder(prompt_count, o.seed).at(position);
  d.generator = at::detail::createCPUGenerator(mix_seed(o.seed ^ kDistillSalt, position));
  const int n = static_cast<int>(o.student_timesteps.size());
  const double u = at::rand({1}, d.generator, at::TensorOptions().dtype(at::kDouble)).item<double>();
  d.exit_step = o.random_exit ? std::min(n - 1, static_cast<int>(std::floor(u * n))) : n - 1;
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  d.noise = at::randn(o.latent_shape, d.generator, f32);
  for (int j = 0; j < d.exit_step; ++j) {
    d.step_noises.push_back(at::randn(o.latent_shape, d.generator, f32));
  }
  return d;
}

DmdGradient dmd_gradient(wan::WanModelImpl& model, AdapterSets& sets, const wan::AttentionRun& full,
                         const at::Tensor& x, const FlowExample& noisy, const at::Tensor& context,
                         const at::Tensor& negative_context, const at::Tensor& condition, double guidance) {
  c10::NoGradGuard no_grad;
  const auto dev = model.device();
  const at::Tensor x_t = noisy.x_t.to(dev), t = noisy.t.to(dev);
  at::Tensor v_teacher, v_critic;
  {
    ActiveAdapters teacher(sets, "");
    v_teacher = velocity(model, full, x_t, t, context, condition);
    if (guidance != 1.0) {
      const at::Tensor v_uncond = velocity(model, full, x_t, t, negative_context, condition);
      v_teacher = v_uncond + (v_teacher - v_uncond) * guidance;
    }
  }
  {
    ActiveAdapters critic(sets, kCritic);
    v_critic = velocity(model, full, x_t, t, context, condition);
  }
  DmdGradient g;
  g.x0_teacher = x_t - v_teacher * noisy.sigma;
  g.x0_critic = x_t - v_critic * noisy.sigma;
  const int64_t f0 = noisy.first_loss_frame;
  const at::Tensor xd = x.detach().to(dev, at::kFloat);
  const at::Tensor scale = (loss_frames(xd, f0) - loss_frames(g.x0_teacher, f0)).abs().mean();
  g.grad = at::zeros_like(xd);
  loss_frames(g.grad, f0).copy_((loss_frames(g.x0_critic, f0) - loss_frames(g.x0_teacher, f0)) / scale);
  return g;
}

DistillResult distill(wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                      const std::vector<DistillPrompt>& prompts, const DistillOptions& o) {
  validate_distill(model, backend, prompts, o);
  auto log = wan::models_logger();
  const plugin::MethodInfo method = training_method(backend, o.method);
  const plugin::MethodInfo teacher_method = training_method(backend, o.teacher_method);
  // The student trains the extras its method reads, except those the teacher reads too: they are
  // the trained model's own, and the teacher must not change under the student.
  const SparseExtrasNeeded student_reads = sparse_extras_for(method), teacher_reads = sparse_extras_for(teacher_method);
  add_sparse_extras(model, student_reads.gate_compress || teacher_reads.gate_compress,
                    student_reads.proj_l || teacher_reads.proj_l);
  SparseExtrasNeeded extras;
  extras.gate_compress = student_reads.gate_compress && !teacher_reads.gate_compress;
  extras.proj_l = student_reads.proj_l && !teacher_reads.proj_l;
  AdapterSets sets(model);
  sets.add(kStudent, o.student_lora, mix_seed(o.seed, 1));
  sets.add(kCritic, o.critic_lora, mix_seed(o.seed, 2));
  const DistillRole student =
      make_role(sets.adapters(kStudent), sparse_extra_parameters(model, extras), o.student_lr, o.weight_decay);
  const DistillRole critic = make_role(sets.adapters(kCritic), {}, o.critic_lr, o.weight_decay);

  DistillResult result;
  for (const auto& [name, tensor] : sparse_extra_parameters(model, teacher_reads)) result.frozen_extras.insert(name);
  DistillHistory history;
  if (!o.resume_from.empty()) {
    history = read_distill_state(o.resume_from, student, critic, o, prompts.size());
    log->info("Distillation resumes from '{}' at step {}", o.resume_from, history.step);
  }
  if (!o.checkpoint_dir.empty()) std::filesystem::create_directories(o.checkpoint_dir);
  std::set<std::string> written;
  const auto save_checkpoint = [&] {
    if (o.checkpoint_dir.empty()) return;
    result.checkpoint_path = checkpoint_file(o.checkpoint_dir, "distill-step", history.step, written);
    written.insert(result.checkpoint_path);
    write_distill_state(result.checkpoint_path, student, critic, o, prompts.size(), history);
    log->info("Distillation checkpoint written: {}", result.checkpoint_path);
  };
  const auto finish = [&](bool cancelled) {
    result.steps_done = history.step;
    result.cancelled = cancelled;
    result.generator_losses = history.generator_losses;
    result.critic_losses = history.critic_losses;
    result.dmd_grad_norms = history.dmd_grad_norms;
    sets.activate(kStudent);  // the model computes the student from here on
    return result;
  };

  GradScope student_scope(student.trained), critic_scope(critic.trained);
  wan::AttentionChoice student_attention{backend, o.method, o.method_params};
  wan::AttentionChoice teacher_attention{backend, o.teacher_method, o.teacher_method_params};
  if (has_sparsity(teacher_method)) teacher_attention.params["sparsity"] = o.teacher_sparsity;
  StepAttention student_runs(model), teacher_runs(model);
  const wan::AttentionRun& full = teacher_runs.for_latent(teacher_attention, o.latent_shape);
  const int64_t patch_t = model.config().patch_size[0];
  // The noise levels of the re-noising and of the critic's examples: the expert's side of the boundary.
  const std::pair<double, double> side = flow_s_range(o.sigma_min, o.sigma_max, o.shift);
  const std::pair<double, double> renoise = renoise_range(o);
  for (int step = history.step + 1; step <= o.steps; ++step) {
    if (o.is_cancelled && o.is_cancelled()) {
      log->info("Distillation cancelled before step {}", step);
      save_checkpoint();
      return finish(true);
    }
    const auto start = std::chrono::steady_clock::now();
    StepMemory memory(model.device());
    DistillStep report;
    report.step = step;
    report.steps = o.steps;
    if (has_sparsity(method)) {
      report.sparsity = sparsity_at(o.sparsity, step);
      student_attention.params["sparsity"] = report.sparsity;
    }
    const wan::AttentionRun& student_run = student_runs.for_latent(student_attention, o.latent_shape);

    // Generator update: the student's sample with autograd through its last step, the DMD gradient
    // at its re-noised copy, loss 0.5 * ||x - stopgrad(x - g)||^2 (mean).
    {
      set_requires_grad(critic.trained, false);
      set_requires_grad(student.trained, true);
      ActiveAdapters active(sets, kStudent);
      DistillDraws d = distill_draws(o, prompts.size(), step, 0);
      const DistillPrompt& p = prompts[d.prompt];
      const at::Tensor x = student_sample(model, student_run, d, p, o.student_timesteps, o.checkpointing);
      FlowExample noisy = make_flow_example(x.detach(), p.first_frame.defined(), o.shift, patch_t, d.generator,
                                            renoise.first, renoise.second);
      const DmdGradient g =
          dmd_gradient(model, sets, full, x, noisy, p.context, o.negative_context, p.condition, o.guidance);
      const int64_t f0 = noisy.first_loss_frame;
      const at::Tensor target = (x - g.grad).detach();
      at::Tensor loss = (loss_frames(x, f0) - loss_frames(target, f0)).square().mean() * 0.5;
      report.dmd_grad_norm = g.grad.norm().item<double>();
      report.timestep = 1000.0 * noisy.sigma;
      report.exit_step = d.exit_step;
      if (o.regression_weight > 0) {
        const at::Tensor x_teacher = teacher_sample(model, sets, full, d, p, o);
        const at::Tensor reg = (loss_frames(x, f0) - loss_frames(x_teacher, f0)).square().mean();
        report.regression_loss = reg.item<double>();
        loss = loss + reg * o.regression_weight;
      }
      loss.backward();
      report.generator_loss = loss.item<double>();
      report.student_grad_norm = optimizer_step(student.trained, *student.optimizer, o.student_lr, o.grad_clip);
    }

    // Critic updates: the flow-matching loss on a fresh detached student sample each.
    set_requires_grad(student.trained, false);
    set_requires_grad(critic.trained, true);
    double critic_sum = 0;
    for (int u = 1; u <= o.critic_updates; ++u) {
      DistillDraws d = distill_draws(o, prompts.size(), step, u);
      const DistillPrompt& p = prompts[d.prompt];
      at::Tensor x;
      {
        c10::NoGradGuard no_grad;
        ActiveAdapters active(sets, kStudent);
        x = student_sample(model, student_run, d, p, o.student_timesteps, false);
      }
      ActiveAdapters active(sets, kCritic);
      const FlowExample ex =
          make_flow_example(x, p.first_frame.defined(), o.shift, patch_t, d.generator, side.first, side.second);
      const at::Tensor loss =
          flow_loss(velocity(model, full, ex.x_t, ex.t, p.context, p.condition, o.checkpointing), ex);
      loss.backward();
      critic_sum += loss.item<double>();
      report.critic_grad_norm = optimizer_step(critic.trained, *critic.optimizer, o.critic_lr, o.grad_clip);
    }
    report.critic_loss = critic_sum / o.critic_updates;
    report.peak_bytes = memory.peak_bytes();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    history.step = step;
    history.generator_losses.push_back(report.generator_loss);
    history.critic_losses.push_back(report.critic_loss);
    history.dmd_grad_norms.push_back(report.dmd_grad_norm);
    if (!std::isfinite(report.generator_loss) || !std::isfinite(report.critic_loss)) {
      log->warn("Distillation step {}: a loss is not finite (generator {}, critic {}); lower the learning rates",
                step, report.generator_loss, report.critic_loss);
    }
    if (o.on_step) o.on_step(report);
    if (o.on_validate && o.validate_every > 0 && (step % o.validate_every == 0 || step == o.steps)) {
      ActiveAdapters active(sets, kStudent);
      o.on_validate(step, student_attention);
    }
    if (o.save_every > 0 && step % o.save_every == 0 && step < o.steps) save_checkpoint();
  }
  save_checkpoint();
  return finish(false);
}

}  // namespace vidgraph::train
