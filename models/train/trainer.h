// Fine-tuning of the Wan DiT over prepared tensors (latents + text embeddings): flow-matching
// objective (objective.h), LoRA adapters or full fine-tuning, LibTorch's AdamW with warm-up and a
// constant or cosine learning rate, global-norm gradient clipping, gradient accumulation, fp32
// master weights, per-block gradient checkpointing, the sparsity schedule of vsa / sla_star,
// resumable checkpoints and the LoRA / full-checkpoint writers. No media, no graph: the TrainWan
// node feeds it and reports its steps. See README.md beside this file for the formulas.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/parallel/sequence_parallel.h"
#include "models/train/lora.h"
#include "models/wan/wan_model.h"
#include "plugins/api/attention_backend.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::train {

struct TrainingSample {
  at::Tensor latent;   // [C, F, h, w] fp32: the clean VAE latent x0 (C = the model's out_dim)
  at::Tensor context;  // [L, text_dim] fp32: the text encoder output, L <= text_len
  // Image-to-video. Without `condition` (TI2V-5B): latent frame 0 is the conditioning image, kept
  // clean, no loss. With it (Wan2.2-I2V-A14B, in_dim = C + its channels): [4 + C, F, h, w] fp32,
  // the image conditioning (models/sampling/i2v_condition.h) beside x_t at every call.
  bool image_to_video = false;
  at::Tensor condition;
  std::string name;             // for messages

  // TI2V-5B's image-to-video: latent frame 0 stays clean.
  bool clean_first_frame() const { return image_to_video && !condition.defined(); }
};

// Sparsity of vsa / sla_star per step k (1-based): start + (target - start) * min(k - 1, steps) / steps;
// steps = 0 means target from step 1.
struct SparsitySchedule {
  double start = 0.0, target = 0.875;
  int steps = 0;
};

enum class TrainMode { Lora, Full };

struct TrainStep {
  int step = 0, steps = 0;  // step just done (1-based) of steps
  double loss = 0, lr = 0, grad_norm = 0, seconds = 0;  // grad_norm: global norm before clipping
  int64_t peak_bytes = 0;  // the step's peak memory: GPU allocator peak, or the process's peak RSS on CPU
};

struct TrainOptions {
  TrainMode mode = TrainMode::Lora;
  LoraOptions lora;
  // Self-attention method of the backend: "full", "vsa" or "sla_star". vsa trains to_gate_compress,
  // sla_star also proj_l (zero-initialised when the model has none), in both modes.
  std::string method = "full";
  plugin::ParamMap method_params;  // other method params; the sparsity comes from `sparsity`
  SparsitySchedule sparsity;
  int steps = 100, batch = 1, accumulation = 1, warmup_steps = 0;
  std::string lr_schedule = "constant";  // or "cosine": lr * (1 + cos(pi * (k-1-warmup) / (steps-warmup))) / 2
  double lr = 1e-4, weight_decay = 0.0, grad_clip = 1.0, shift = 5.0;  // grad_clip <= 0: no clipping
  // The noise levels the examples are drawn in (timestep 1000 sigma), 0 <= sigma_min < sigma_max <= 1:
  // the whole range by default; an expert of a two-expert model (Wan2.2-A14B) trains on its side of
  // the boundary (high noise [boundary, 1], low noise [0, boundary]), where it runs when sampling.
  double sigma_min = 0.0, sigma_max = 1.0;
  // Classifier-free guidance needs a model that has also learned without its caption: each sample
  // is drawn with `empty_context` (the encoding of the sampler's negative prompt, usually "") in
  // place of its own with this probability, in [0, 1). 0 leaves every draw as it was.
  double caption_dropout = 0.0;
  at::Tensor empty_context;  // [L, text_dim] fp32; required when caption_dropout > 0
  uint64_t seed = 0;
  bool checkpointing = false;  // gradient checkpointing per DiT block
  int save_every = 0;          // write a resumable checkpoint every N steps (0: only at the end / cancel)
  // Resumable checkpoints go here ("" = none are written) as train-step-000040.safetensors; a name
  // another run already wrote gets -2, -3, ... (never replaced).
  std::string checkpoint_dir;
  std::string resume_from;     // a checkpoint file written by train(), or ""
  std::function<void(const TrainStep&)> on_step;
  std::function<bool()> is_cancelled;  // polled before every step; true stops and writes a checkpoint
  // Every `validate_every` steps and after the last (0: never), after on_step: the step and the
  // attention that step trained with (its method, params and scheduled sparsity; prepare it for the
  // validation's own latent shape), for sampling with the model as trained so far. It must not change the model or draw from the trainer's
  // generators (seeded sampling noise does not).
  int validate_every = 0;
  std::function<void(int step, const wan::AttentionChoice& attention)> on_validate;
  // Several ranks: every rank calls train() with the same model, samples and options; each runs
  // its share of the tokens (models/parallel), the gradients are summed over the ranks before each
  // optimizer step, so every rank holds the single-process model after every step. Cancelling is
  // agreed (any rank's cancel stops all at the same step); only rank 0 writes checkpoints, and
  // on_validate runs on every rank (its sampling is sequence-parallel too). The caller keeps the
  // group alive.
  parallel::SequenceParallel* sequence_parallel = nullptr;
};

struct TrainResult {
  int steps_done = 0;  // the last step done, counting the steps of a resumed checkpoint
  bool cancelled = false;
  std::vector<double> losses;   // one per step done (a resumed run includes the checkpoint's)
  std::string checkpoint_path;  // the last resumable checkpoint written, or ""
};

// Trains `model` in place: LoRA mode attaches adapters (lora.h) and leaves them attached with their
// trained values; full mode updates every parameter. Trained tensors get requires_grad only while
// training. Throws std::invalid_argument with a sentence for bad options or samples, before any
// work; std::runtime_error for a checkpoint that cannot be read or does not match the options.
TrainResult train(wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                  const std::vector<TrainingSample>& samples, const TrainOptions& options);

// The attached adapters in ComfyUI's layout: diffusion_model.<module>.lora_down.weight [r, in],
// .lora_up.weight [out, r], .alpha (scalar, = scale * rank), and the sparse extras that are
// present and non-zero as plain tensors (diffusion_model.blocks.N.self_attn.to_gate_compress.weight ...).
// `leave_out` names extras the file should not carry (a distillation's frozen teacher gates: the
// base model's own). Matrices and extras in `dtype` (alphas stay float32). Atomic write. Throws
// std::invalid_argument when the model has no adapter.
void save_lora(const wan::WanModelImpl& model, const std::string& path, const std::set<std::string>& leave_out = {},
               at::ScalarType dtype = at::kFloat);

// Every parameter in the official key layout (one .safetensors, no prefix, config metadata that
// wan_load_model reads), attached adapters merged into their weights (W + scale * up down), each
// in `dtype` when given, else as the model holds it.
void save_full_checkpoint(const wan::WanModelImpl& model, const std::string& path,
                          std::optional<at::ScalarType> dtype = std::nullopt);

}  // namespace vidgraph::train
