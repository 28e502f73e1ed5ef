// The pieces of train() (trainer.cpp), internal to vidgraph_train: option checks, schedules, the
// trained tensors with their fp32 masters, the resumable state file and the step's peak memory.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/adamw.h>

#include "models/train/trainer.h"

namespace vidgraph::train {

// The training method's entry in the backend's method table: its params and the extras it reads
// (without a backend: "full", the one method that runs without one, with none).
plugin::MethodInfo training_method(plugin::AttentionBackend* backend, const std::string& method);
// Whether the method takes a sparsity: then TrainOptions::sparsity sets it at every step.
bool has_sparsity(const plugin::MethodInfo& method);

// Throws std::invalid_argument with a sentence for the first bad option or sample.
void validate_training(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                       const std::vector<TrainingSample>& samples, const TrainOptions& options);

double sparsity_at(const SparsitySchedule& schedule, int step);  // step 1-based
double learning_rate_at(const TrainOptions& options, int step);  // step 1-based

// A trained tensor: `model` is what the forward uses (requires grad while training); `master` is
// what AdamW updates: the same tensor when it is fp32, else an fp32 copy written back after each step.
struct Trainable {
  std::string name;  // canonical parameter name, or <module>.lora_down / <module>.lora_up
  at::Tensor model;
  at::Tensor master;
};

// Writes the resumable state atomically to `path` (safetensors: masters + AdamW moments; JSON
// metadata: step, losses, AdamW step counts, the options that must match on resume).
void write_train_state(const std::string& path, const std::vector<Trainable>& trained,
                       torch::optim::AdamW& optimizer, const TrainOptions& options, size_t sample_count, int step,
                       const std::vector<double>& losses);

struct ResumedState {
  int step = 0;
  std::vector<double> losses;
};
// Loads the state into the masters (and model tensors) and the optimizer. Throws
// std::runtime_error naming the file when it is unreadable or does not match `options`.
ResumedState read_train_state(const std::string& path, const std::vector<Trainable>& trained,
                              torch::optim::AdamW& optimizer, const TrainOptions& options, size_t sample_count);

// Trained tensors require grad only inside a training run, also when it throws: inference elsewhere
// must not build autograd graphs. The constructor turns requires_grad on, the destructor off (and
// drops every gradient).
class GradScope {
 public:
  explicit GradScope(const std::vector<Trainable>& trained);
  ~GradScope();
  GradScope(const GradScope&) = delete;
  GradScope& operator=(const GradScope&) = delete;

 private:
  const std::vector<Trainable>& trained_;
};

// The sample index of each position: an epoch-wise permutation of `count` seeded by (seed, epoch).
class SampleOrder {
 public:
  SampleOrder(size_t count, uint64_t seed) : count_(static_cast<int64_t>(count)), seed_(seed) {}
  size_t at(int64_t position);

 private:
  int64_t count_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  at::Tensor perm_;
};

// Self-attention prepared once per sparsity value and token grid: a step's layer calls, and their
// recomputation under checkpointing, share one preparation instead of preparing at every call.
class StepAttention {
 public:
  explicit StepAttention(const wan::WanModelImpl& model) : model_(model) {}
  // The run of `choice` for forwards of `latent_shape` ([C, F, H, W]).
  const wan::AttentionRun& for_latent(const wan::AttentionChoice& choice, at::IntArrayRef latent_shape);

 private:
  const wan::WanModelImpl& model_;
  plugin::ParamMap params_;
  std::map<std::vector<int64_t>, wan::AttentionRun> runs_;
};

// Global L2 norm of the masters' gradients; scaled down to `clip` when above it (clip > 0).
double clip_gradients(const std::vector<Trainable>& trained, double clip);

// One optimizer step over gradients already on the model tensors: copies them to the fp32 masters
// (where those are copies), clips (clip_gradients), steps AdamW at `lr`, writes the masters back to
// the model tensors and clears every gradient. Returns the global norm before clipping.
double optimizer_step(const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer, double lr, double clip);

// <stem>-000040.safetensors in `dir`, or, when a file of that name exists that this run did not
// write (`mine`), the first free <stem>-000040-2.safetensors, -3, ...: a run never replaces another
// run's checkpoint. train() uses the stem "train-step".
std::string checkpoint_file(const std::string& dir, const std::string& stem, int step,
                            const std::set<std::string>& mine);

// Throws std::invalid_argument with `sentence` unless `ok`.
void require(bool ok, const std::string& sentence);

// A text context [L, text_dim] with 1 <= L <= text_len, else std::invalid_argument with a sentence
// starting with `needs` ("Training sample 2 needs a") and ending with `advice`.
void require_text_context(const wan::WanConfig& c, const at::Tensor& t, const std::string& needs,
                          const std::string& advice = "");

// Image conditioning beside a latent of `latent_shape` [C, F, h, w] (Wan2.2-I2V-A14B: in_dim = C +
// its channels): [in_dim - out_dim, F, h, w], required by a model that takes it and refused by one
// that does not, else std::invalid_argument with a sentence starting with `who` ("Training sample
// 2", "Prompt 0 ('…')"); `advice` ends the sentence for a missing one.
void require_image_condition(const wan::WanConfig& c, const at::Tensor& condition, at::IntArrayRef latent_shape,
                             const std::string& who, const std::string& advice);

// The plugin's prepare() judges `method` on this model's device, dtype and head dim for a latent of
// `latent_shape`, with both ends of `sparsity` when the method takes one: its own rules. `who`
// starts the sentences ("Training" -> "Training method 'vsa' needs the attention plugin ...",
// "Training with attention method 'vsa' cannot run: ..."); `sparsity_field` names where the
// sparsity is set instead of method_params ("TrainOptions::sparsity").
void validate_attention_method(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                               const std::string& method, const plugin::ParamMap& method_params,
                               const SparsitySchedule& sparsity, at::IntArrayRef latent_shape,
                               const std::string& who, const std::string& sparsity_field);

// Peak memory of a step: the GPU allocator's peak on CUDA, the process's peak RSS on the CPU
// (reset through /proc/self/clear_refs where the kernel allows it; else the peak since start).
class StepMemory {
 public:
  explicit StepMemory(const c10::Device& device);
  int64_t peak_bytes() const;

 private:
  c10::Device device_;
};

}  // namespace vidgraph::train
