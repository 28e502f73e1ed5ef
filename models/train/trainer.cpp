#include "models/train/trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <map>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <spdlog/spdlog.h>

#include "models/train/block_checkpoint.h"
#include "models/train/objective.h"
#include "models/train/sparse_extras.h"
#include "models/train/train_seed.h"
#include "models/train/trainer_parts.h"
#include "models/wan/wan_log.h"

namespace vidgraph::train {

namespace {

// What the run trains, with fp32 masters (lora.h adapters are fp32 already).
std::vector<Trainable> collect_trainables(wan::WanModelImpl& model, const TrainOptions& o,
                                         const SparseExtrasNeeded& extras) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  if (o.mode == TrainMode::Full) {
    tensors = wan::wan_named_parameters(model);
  } else {
    for (const auto& m : attach_lora(model, o.lora, o.seed)) {
      tensors.emplace_back(m.name + ".lora_down", m.linear->adapter.down);
      tensors.emplace_back(m.name + ".lora_up", m.linear->adapter.up);
    }
    for (auto& extra : sparse_extra_parameters(model, extras)) {
      tensors.push_back(extra);
    }
  }
  std::vector<Trainable> out;
  for (auto& [name, t] : tensors) {
    if (t.scalar_type() == at::kByte) {
      throw std::invalid_argument("Cannot train '" + name + "': the DiT keeps this weight as fp8 codes (keep_fp8), "
                                  "which cannot learn. Load the model with keep_fp8 off, or train a LoRA.");
    }
    at::Tensor master = t.scalar_type() == at::kFloat ? t : t.detach().to(at::kFloat);
    out.push_back({name, t, master});
  }
  return out;
}

struct BatchItem {
  const TrainingSample* sample;
  FlowExample example;
  const at::Tensor* context;  // the sample's, or the empty caption's when dropped
};

// Draws from `gen` only when dropout is on, so runs without it see the same draws as before.
const at::Tensor* context_for(const TrainingSample& s, const TrainOptions& o, at::Generator& gen) {
  if (o.caption_dropout <= 0) {
    return &s.context;
  }
  const double u = at::rand({1}, gen, at::TensorOptions().dtype(at::kDouble)).item<double>();
  return u < o.caption_dropout ? &o.empty_context : &s.context;
}

// One forward + backward over items of one latent shape; returns the items' summed loss.
double forward_backward(wan::WanModelImpl& model, const std::vector<BatchItem*>& items, const wan::AttentionRun& run,
                        bool checkpointing, double loss_weight) {
  std::vector<at::Tensor> xs, ts, ctxs;
  int64_t longest = 0;
  for (const BatchItem* it : items) {
    longest = std::max(longest, it->context->size(0));
  }
  for (const BatchItem* it : items) {
    xs.push_back(with_condition(it->example.x_t, it->sample->condition));
    ts.push_back(it->example.t);
    at::Tensor c = it->context->to(at::kCPU, at::kFloat);
    if (c.size(0) < longest) {  // zero rows: the model pads with zeros to text_len anyway
      c = at::cat({c, at::zeros({longest - c.size(0), c.size(1)}, c.options())}, 0);
    }
    ctxs.push_back(c);
  }
  const auto dev = model.device();
  const at::Tensor pred = training_forward(model, at::stack(xs).to(dev), at::stack(ts).to(dev), at::stack(ctxs).to(dev),
                                           run, checkpointing);
  at::Tensor total;
  for (size_t i = 0; i < items.size(); ++i) {
    at::Tensor l = flow_loss(pred[static_cast<int64_t>(i)], items[i]->example);
    total = total.defined() ? total + l : l;
  }
  (total * loss_weight).backward();
  return total.item<double>();
}

// Whether to stop before this step: the caller's cancel, agreed over the ranks (any rank's counts).
bool cancelled(const TrainOptions& o) {
  const bool mine = o.is_cancelled && o.is_cancelled();
  if (o.sequence_parallel == nullptr) return mine;
  parallel::ProcessGroupHandle& group = o.sequence_parallel->group();
  at::Tensor votes = at::full({1}, mine ? 1.0f : 0.0f, at::TensorOptions().device(group.options().device));
  group.all_reduce_sum(votes);
  return votes.item<float>() > 0;
}

// Several ranks: each rank's gradients are its tokens' share; their sum is the whole gradient.
void sum_gradients_over_ranks(const std::vector<Trainable>& trained, const TrainOptions& o) {
  if (o.sequence_parallel == nullptr) return;
  std::vector<at::Tensor> tensors;
  for (const Trainable& t : trained) tensors.push_back(t.model);
  o.sequence_parallel->all_reduce_gradients(tensors);
}

}  // namespace

TrainResult train(wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                  const std::vector<TrainingSample>& samples, const TrainOptions& o) {
  validate_training(model, backend, samples, o);
  auto log = wan::models_logger();
  const plugin::MethodInfo method = training_method(backend, o.method);
  const SparseExtrasNeeded extras = sparse_extras_for(method);
  add_sparse_extras(model, extras.gate_compress, extras.proj_l);
  const std::vector<Trainable> trained = collect_trainables(model, o, extras);
  std::vector<at::Tensor> masters;
  for (const Trainable& t : trained) {
    masters.push_back(t.master);
  }
  torch::optim::AdamW optimizer(masters, torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));

  TrainResult result;
  const bool writes = o.sequence_parallel == nullptr || o.sequence_parallel->rank() == 0;
  if (!o.resume_from.empty()) {
    ResumedState r = read_train_state(o.resume_from, trained, optimizer, o, samples.size());
    result.steps_done = r.step;
    result.losses = r.losses;
    log->info("Training resumes from '{}' at step {}", o.resume_from, r.step);
  }
  if (!o.checkpoint_dir.empty() && writes) {
    std::filesystem::create_directories(o.checkpoint_dir);
  }
  std::set<std::string> written;  // this run's checkpoints (it may rewrite those)
  auto save_checkpoint = [&](int step) {
    if (o.checkpoint_dir.empty() || !writes) {
      return;
    }
    result.checkpoint_path = checkpoint_file(o.checkpoint_dir, "train-step", step, written);
    written.insert(result.checkpoint_path);
    write_train_state(result.checkpoint_path, trained, optimizer, o, samples.size(), step, result.losses);
    log->info("Training checkpoint written: {}", result.checkpoint_path);
  };

  GradScope grad_scope(trained);
  SampleOrder order(samples.size(), o.seed);
  wan::AttentionChoice attention;
  attention.backend = backend;
  attention.method = o.method;
  attention.params = o.method_params;
  attention.sequence_parallel = o.sequence_parallel;
  StepAttention step_attention(model);
  const int64_t patch_t = model.config().patch_size[0];
  const std::pair<double, double> s_range = flow_s_range(o.sigma_min, o.sigma_max, o.shift);
  const double loss_weight = 1.0 / (static_cast<double>(o.batch) * o.accumulation);
  for (int step = result.steps_done + 1; step <= o.steps; ++step) {
    if (cancelled(o)) {
      result.cancelled = true;
      log->info("Training cancelled before step {}", step);
      save_checkpoint(result.steps_done);
      return result;
    }
    const auto start = std::chrono::steady_clock::now();
    StepMemory memory(model.device());
    if (has_sparsity(method)) {
      attention.params["sparsity"] = sparsity_at(o.sparsity, step);
    }
    double loss_sum = 0;
    for (int a = 0; a < o.accumulation; ++a) {
      std::vector<BatchItem> items;
      for (int b = 0; b < o.batch; ++b) {
        const int64_t position = (static_cast<int64_t>(step - 1) * o.accumulation + a) * o.batch + b;
        const TrainingSample& s = samples[order.at(position)];
        at::Generator gen = at::detail::createCPUGenerator(mix_seed(o.seed, position));
        FlowExample example = make_flow_example(s.latent, s.clean_first_frame(), o.shift,
                                                patch_t, gen, s_range.first, s_range.second);
        items.push_back({&s, std::move(example), context_for(s, o, gen)});
      }
      std::map<std::vector<int64_t>, std::vector<BatchItem*>> by_shape;  // one forward per latent shape
      for (BatchItem& it : items) {
        by_shape[it.sample->latent.sizes().vec()].push_back(&it);
      }
      for (const auto& [shape, group] : by_shape) {
        loss_sum += forward_backward(model, group, step_attention.for_latent(attention, shape), o.checkpointing,
                                     loss_weight);
      }
    }
    sum_gradients_over_ranks(trained, o);
    TrainStep report;
    report.step = step;
    report.steps = o.steps;
    report.lr = learning_rate_at(o, step);
    report.grad_norm = optimizer_step(trained, optimizer, report.lr, o.grad_clip);
    report.loss = loss_sum * loss_weight;
    report.peak_bytes = memory.peak_bytes();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.losses.push_back(report.loss);
    result.steps_done = step;
    if (!std::isfinite(report.loss)) {
      log->warn("Training step {}: the loss is not finite ({}); lower the learning rate", step, report.loss);
    }
    if (o.on_step) {
      o.on_step(report);
    }
    if (o.on_validate && o.validate_every > 0 && (step % o.validate_every == 0 || step == o.steps)) {
      o.on_validate(step, attention);
    }
    if (o.save_every > 0 && step % o.save_every == 0 && step < o.steps) {
      save_checkpoint(step);
    }
  }
  save_checkpoint(result.steps_done);
  return result;
}

}  // namespace vidgraph::train
