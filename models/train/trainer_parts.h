// The pieces of train() (trainer.cpp), internal to vidgraph_train: option checks, schedules, the
// trained tensors with their fp32 masters, the resumable state file and the step's peak memory.
#pragma once

#include <cstdint>
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
