// Pieces of the training loops shared by train() (trainer.cpp) and distill() (distill.cpp): the
// grad scope, the sample order, per-step attention preparation, clipping, the optimizer step over
// fp32 masters and checkpoint file names (declared in trainer_parts.h).
#include <cstdio>
#include <filesystem>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/randperm.h>
#include <ATen/ops/stack.h>
#include <c10/core/GradMode.h>

#include "models/train/train_seed.h"
#include "models/train/trainer_parts.h"

namespace vidgraph::train {

GradScope::GradScope(const std::vector<Trainable>& trained) : trained_(trained) {
  for (const Trainable& t : trained_) {
    t.model.requires_grad_(true);
  }
}

GradScope::~GradScope() {
  for (const Trainable& t : trained_) {
    t.model.requires_grad_(false);
    t.model.mutable_grad() = at::Tensor();
    t.master.mutable_grad() = at::Tensor();
  }
}

size_t SampleOrder::at(int64_t position) {
  const int64_t epoch = position / count_;
  if (epoch != epoch_) {
    at::Generator gen = at::detail::createCPUGenerator(mix_seed(seed_ ^ 0x0DE7ULL, epoch));
    perm_ = at::randperm(count_, gen, at::TensorOptions().dtype(at::kLong));
    epoch_ = epoch;
  }
  return static_cast<size_t>(perm_[position % count_].item<int64_t>());
}

const wan::AttentionRun& StepAttention::for_latent(const wan::AttentionChoice& choice, at::IntArrayRef latent_shape) {
  if (choice.params != params_) {
    params_ = choice.params;
    runs_.clear();
  }
  auto it = runs_.find(latent_shape.vec());
  if (it == runs_.end()) {
    it = runs_.emplace(latent_shape.vec(), choice.prepare(model_.config(), model_.device(), model_.compute_dtype(),
                                                          latent_shape)).first;
  }
  return it->second;
}

double clip_gradients(const std::vector<Trainable>& trained, double clip) {
  std::vector<at::Tensor> norms;
  for (const Trainable& t : trained) {
    if (t.master.grad().defined()) {
      norms.push_back(t.master.grad().norm());
    }
  }
  if (norms.empty()) {
    return 0.0;
  }
  const double norm = at::stack(norms).norm().item<double>();
  if (clip > 0 && norm > clip) {
    const double coef = clip / (norm + 1e-6);
    for (const Trainable& t : trained) {
      if (t.master.grad().defined()) {
        t.master.mutable_grad().mul_(coef);
      }
    }
  }
  return norm;
}

double optimizer_step(const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer, double lr, double clip) {
  for (const Trainable& t : trained) {
    if (!t.model.is_same(t.master) && t.model.grad().defined()) {
      t.master.mutable_grad() = t.model.grad().to(at::kFloat);
    }
  }
  const double norm = clip_gradients(trained, clip);
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  optimizer.step();
  c10::NoGradGuard no_grad;
  for (const Trainable& t : trained) {
    if (!t.model.is_same(t.master)) {
      t.model.copy_(t.master);
    }
    t.model.mutable_grad() = at::Tensor();
    t.master.mutable_grad() = at::Tensor();
  }
  return norm;
}

std::string checkpoint_file(const std::string& dir, const std::string& stem, int step,
                            const std::set<std::string>& mine) {
  char number[32];
  std::snprintf(number, sizeof(number), "-%06d", step);
  const std::string base = stem + number;
  for (int n = 1;; ++n) {
    const std::string name = n == 1 ? base : base + "-" + std::to_string(n);
    const std::string path = (std::filesystem::path(dir) / (name + ".safetensors")).string();
    std::error_code ec;
    if (mine.count(path) || !std::filesystem::exists(path, ec)) return path;
  }
}

}  // namespace vidgraph::train
