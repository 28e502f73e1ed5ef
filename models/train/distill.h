// Step distillation of the Wan DiT (DMD2, Yin et al. 2024): a few-step student without guidance
// learns to match a many-step teacher with classifier-free guidance. Three roles over ONE copy of
// the base weights (adapter_sets.h):
//   teacher  (real score)  the frozen base, `full` attention, guidance with the negative context;
//   critic   (fake score)  a LoRA adapter set, `full` attention, trained with the flow-matching
//                          loss (objective.h) on the student's detached samples;
//   student  (generator)   a LoRA adapter set (+ the sparse extras of its method, trained in the
//                          student only), the method the user picks (full / vsa / sla_star, with
//                          the sparsity schedule), no guidance, a few steps (default {1000, 757, 522}).
// Each step: one generator update (the student's own chain from noise, gradient through the last
// step run; re-noise at a random timestep; the DMD gradient = normalised difference of the critic's
// and the teacher's clean predictions), then `critic_updates` critic updates, each on a fresh
// student sample. AdamW with fp32 masters per role, gradient clipping, per-block checkpointing,
// seeded draws per position, cancel with a resumable checkpoint, bit-identical resume on the CPU.
// No media, no graph: the prompts come encoded. Formulas in README.md ("Step distillation").
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/train/adapter_sets.h"
#include "models/train/lora.h"
#include "models/train/objective.h"
#include "models/train/trainer.h"
#include "models/wan/wan_model.h"
#include "plugins/api/attention_backend.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::train {

// One prompt of the (data-free) distillation set.
struct DistillPrompt {
  at::Tensor context;      // [L, text_dim] fp32: the text encoder output, L <= text_len
  at::Tensor first_frame;  // optional [C, 1, h, w] fp32: image-to-video (latent frame 0, kept clean)
  std::string name;        // for messages
  // Optional [C, F, h, w] fp32, the latent shape: a clip of the prompt (a training set's). Needed
  // when the student's first timestep is below 1000 (a low-noise expert): its chain then starts
  // from this clip noised to that timestep, where the high-noise expert's output would be.
  at::Tensor clip;
  // Optional [4 + C, F, h, w] fp32: Wan2.2-I2V-A14B's image conditioning (i2v_condition.h), fed
  // beside the latent at every call of every role; required by a model that takes it.
  at::Tensor condition;
};

struct DistillStep {
  int step = 0, steps = 0;       // step just done (1-based) of steps
  double generator_loss = 0;     // 0.5 * mean(g^2): the DMD loss (+ the regression loss when on)
  double regression_loss = 0;    // mean((x - x_teacher)^2) before its weight, 0 when off
  double critic_loss = 0;        // mean of the step's critic flow-matching losses
  double dmd_grad_norm = 0;      // L2 norm of the normalised DMD gradient g
  double student_grad_norm = 0;  // global norm of the student's gradients before clipping
  double critic_grad_norm = 0;   // the same for the last critic update
  double sparsity = 0;           // the student's sparsity this step (0 for full)
  double timestep = 0;           // the re-noising timestep t = 1000 * sigma of the generator update
  int exit_step = 0;             // the student's chain ran steps 0..exit_step (0-based)
  double seconds = 0;
  int64_t peak_bytes = 0;        // GPU allocator peak, or the process's peak RSS on the CPU
};

struct DistillOptions {
  std::vector<int64_t> latent_shape;  // [C, F, h, w] of the student's samples (C = the model's in_dim)
  at::Tensor negative_context;        // [L, text_dim]: the teacher's unconditional branch (guidance != 1)
  double guidance = 3.5;              // the teacher's classifier-free guidance scale, >= 1 (1: none)

  // The student's steps, timesteps out of 1000 (as Wan Sampler's dmd scheduler samples them).
  std::vector<double> student_timesteps = {1000.0, 757.0, 522.0};
  // One expert of a two-expert model (Wan2.2-A14B) learns its side of the boundary only: every
  // student timestep, the re-noising and the critic's examples keep sigma in [sigma_min,
  // sigma_max] (the high-noise expert: [boundary, 1]; the low-noise one: [0, boundary), its
  // timesteps strictly below). Default: every noise level.
  double sigma_min = 0.0, sigma_max = 1.0;
  // true: each update's chain runs a uniformly drawn number of steps 1..N (DMD2's backward
  // simulation over every step of the schedule); false: always the whole chain.
  bool random_exit = true;

  // LoRA for both roles (TrainMode::Full, a full copy, is refused for now).
  TrainMode student_mode = TrainMode::Lora, critic_mode = TrainMode::Lora;
  LoraOptions student_lora, critic_lora;  // rank, alpha, targets each (lora.h defaults)

  // The teacher's and the critic's self-attention: "full" (DMD2's recipe, for models trained with
  // full attention) or the sparse method a model was trained with (the demo model, VSA-trained
  // checkpoints), at `teacher_sparsity`. Extras it reads stay frozen: the teacher never changes.
  std::string teacher_method = "full";
  plugin::ParamMap teacher_method_params;  // other params; the sparsity comes from teacher_sparsity
  double teacher_sparsity = 0.0;

  // The student's self-attention: "full", "vsa" or "sla_star" (extras trained in the student only).
  std::string method = "full";
  plugin::ParamMap method_params;  // other params; the sparsity comes from `sparsity`
  SparsitySchedule sparsity;       // per generator step

  int steps = 100;          // generator updates
  int critic_updates = 5;   // critic updates per generator update (two time-scale rule)
  double student_lr = 1e-4, critic_lr = 1e-4, weight_decay = 0.0, grad_clip = 1.0;  // clip <= 0: none
  // The re-noising timestep and the critic's flow examples: s ~ U(min, max) mapped by the shift
  // (objective.h), within the noise levels above; the critic draws s over all of them (Train Wan).
  double shift = 5.0, renoise_min = 0.02, renoise_max = 0.98;

  // Optional regression to the teacher (DMD1), off at 0: + weight * mean((x - x_T)^2), x_T the
  // teacher's guided Euler sample from the same initial noise in `regression_steps` steps.
  double regression_weight = 0.0;
  int regression_steps = 8;

  uint64_t seed = 0;
  bool checkpointing = false;  // gradient checkpointing per DiT block (student and critic forwards)
  int save_every = 0;          // write a resumable checkpoint every N steps (0: only at the end / cancel)
  // Resumable checkpoints go here as distill-step-000040.safetensors ("" = none are written).
  std::string checkpoint_dir;
  std::string resume_from;  // a checkpoint file written by distill(), or ""
  std::function<void(const DistillStep&)> on_step;
  std::function<bool()> is_cancelled;  // polled before every step; true stops and writes a checkpoint
  // Every `validate_every` steps and after the last (0: never), after on_step, with the student's
  // adapters active: the step and the student's attention that step (method, params, scheduled
  // sparsity), for sampling the student as trained so far. It must not change the model.
  int validate_every = 0;
  std::function<void(int step, const wan::AttentionChoice& student_attention)> on_validate;
};

struct DistillResult {
  int steps_done = 0;  // the last step done, counting the steps of a resumed checkpoint
  bool cancelled = false;
  std::vector<double> generator_losses, critic_losses, dmd_grad_norms;  // one per step done
  std::string checkpoint_path;  // the last resumable checkpoint written, or ""
  // Sparse extras the teacher read and kept frozen: the base model's own, not the student's (a
  // student file leaves them out: save_lora's leave_out).
  std::set<std::string> frozen_extras;
};

// Distils `model` in place. On return the student's adapters are attached (the model computes the
// student: save_lora writes it, in ComfyUI's layout), its sparse extras are the trained ones, the
// critic's adapters are dropped and the base weights are unchanged. Throws std::invalid_argument
// with a sentence for bad options or prompts before any step; std::runtime_error for a checkpoint
// that cannot be read or does not match the options.
DistillResult distill(wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                      const std::vector<DistillPrompt>& prompts, const DistillOptions& options);

// ---- The pieces of a step, public so that tests can check each against its formula. ----

// The random draws of one update: a CPU generator seeded by (seed, position), position =
// (step - 1) * (critic_updates + 1) + update, update 0 the generator's, 1..critic_updates the
// critic's; from it, in order: u for the exit step (exit = floor(u * N) with random_exit, else N-1),
// the initial noise, one noise per chain step before the exit. The prompt of a position comes from
// the epoch-wise permutation of the prompts seeded by the run seed (as Train Wan's samples).
// `generator` continues the stream: the re-noising (generator update) or the critic's flow example.
struct DistillDraws {
  size_t prompt = 0;
  int exit_step = 0;
  at::Tensor noise;                     // [C, F, h, w] fp32, CPU
  std::vector<at::Tensor> step_noises;  // exit_step tensors like noise
  at::Generator generator;
};
DistillDraws distill_draws(const DistillOptions& options, size_t prompt_count, int step, int update);

// The DMD2 generator gradient at the student's sample x [C, F, h, w] (detached), re-noised as
// `noisy` (make_flow_example(x, ...): x_t = (1 - sigma) x + sigma * noise, timestep 1000 sigma per
// latent frame; image-to-video: frame 0 = x's, timestep 0, not in the loss frames):
//   teacher  v_T = v_u + guidance * (v_c - v_u)  (base model, full attention; v_u on `negative`)
//   critic   v_F                                   (critic set, full attention, `context`)
//   x0_T = x_t - sigma v_T, x0_F = x_t - sigma v_F
//   grad = (x0_F - x0_T) / mean|x - x0_T|          (over the loss frames; 0 on frame 0 of i2v)
// `sets` must hold "critic"; the active set is restored on return. `full` is the teacher's and
// critic's attention run for x's shape. `condition` (Wan2.2-I2V-A14B, else undefined) goes beside
// x_t in both calls. Computed without autograd.
struct DmdGradient {
  at::Tensor grad;  // [C, F, h, w] fp32
  at::Tensor x0_teacher, x0_critic;
};
DmdGradient dmd_gradient(wan::WanModelImpl& model, AdapterSets& sets, const wan::AttentionRun& full,
                         const at::Tensor& x, const FlowExample& noisy, const at::Tensor& context,
                         const at::Tensor& negative_context, const at::Tensor& condition, double guidance);

}  // namespace vidgraph::train
