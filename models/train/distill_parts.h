// The pieces of distill() (distill.cpp), internal to vidgraph_train: the option checks and the
// resumable state file of a distillation (two trained roles, each with its AdamW).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/adamw.h>

#include "models/train/distill.h"
#include "models/train/trainer_parts.h"

namespace vidgraph::train {

// Throws std::invalid_argument with a sentence for the first bad option or prompt; changes nothing.
void validate_distill(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                      const std::vector<DistillPrompt>& prompts, const DistillOptions& options);

// The re-noising range in s (objective.h): [renoise_min, renoise_max] within the expert's side of
// the boundary (sigma_min, sigma_max); validate_distill refuses options where they do not overlap.
std::pair<double, double> renoise_range(const DistillOptions& options);

// A trained role: its tensors (fp32 masters) and its optimizer.
struct DistillRole {
  std::vector<Trainable> trained;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

struct DistillHistory {
  int step = 0;
  std::vector<double> generator_losses, critic_losses, dmd_grad_norms;
};

// Writes the state atomically: `trained.student.<name>` / `trained.critic.<name>` masters, their
// AdamW moments, and the JSON metadata `vidgraph_distill_state` (step, histories, AdamW step
// counts, the options a resume must share).
void write_distill_state(const std::string& path, const DistillRole& student, const DistillRole& critic,
                         const DistillOptions& options, size_t prompt_count, const DistillHistory& history);

// Loads it into the roles. Throws std::runtime_error naming the file when it is unreadable or
// does not match `options`.
DistillHistory read_distill_state(const std::string& path, const DistillRole& student, const DistillRole& critic,
                                  const DistillOptions& options, size_t prompt_count);

}  // namespace vidgraph::train
