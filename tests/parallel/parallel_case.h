// The DiT case both the suite (single process) and its workers (one process per rank) run: a tiny
// Wan DiT with both sparse extras, a batch of 2 with per-frame timesteps, a 5 x 5 x 7 token grid
// (175 tokens: divides by neither 2 nor 3; 8 ragged VSA tiles), forward plus the backward of a fixed
// random projection of the output; and a few LoRA training steps on that DiT.
#pragma once

#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include "models/parallel/sequence_parallel.h"
#include "models/train/trainer.h"
#include "models/wan/wan_model.h"
#include "models/wan/wan_tiny.h"
#include "plugins/api/attention_backend.h"

namespace parallel_case {

inline at::Tensor randn_seeded(at::IntArrayRef shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(at::kFloat));
}

// head_dim 16 with `heads` heads.
inline vidgraph::wan::WanConfig config(int64_t heads) {
  vidgraph::wan::WanConfig c = vidgraph::wan::wan_tiny_config();
  c.num_heads = heads;
  c.dim = 16 * heads;
  c.ffn_dim = 2 * c.dim;
  c.in_dim = 4;
  c.out_dim = 4;
  c.text_len = 8;
  c.text_dim = 16;
  c.with_gate_compress = true;
  c.with_proj_l = true;
  return c;
}

struct Result {
  at::Tensor out;          // [2, 4, 5, 10, 14]
  at::Tensor x_grad;       // same shape
  at::Tensor param_grads;  // every parameter's gradient, flattened and concatenated in name order
};

// Runs the case; with `sp`, sequence-parallel, the gradients summed over ranks.
inline Result run(const std::string& method, vidgraph::plugin::AttentionBackend* backend,
                  vidgraph::parallel::SequenceParallel* sp, int64_t heads = 6) {
  vidgraph::wan::WanModel model = vidgraph::wan::wan_make_model(config(heads), 7);
  std::vector<at::Tensor> params;
  for (auto& [name, p] : vidgraph::wan::wan_named_parameters(*model)) {
    p.requires_grad_(true);
    params.push_back(p);
  }
  at::Tensor x = randn_seeded({2, 4, 5, 10, 14}, 1).requires_grad_(true);
  at::Tensor t = at::tensor({100.0f, 300.0f, 500.0f, 700.0f, 900.0f, 950.0f, 800.0f, 600.0f, 400.0f, 200.0f})
                     .view({2, 5});
  at::Tensor ctx = randn_seeded({2, 3, 16}, 2);
  vidgraph::wan::AttentionChoice choice{backend, method, {}, sp};
  if (method != "full") choice.params = {{"sparsity", 0.5}};
  const vidgraph::wan::AttentionRun attention =
      choice.prepare(model->config(), model->device(), model->compute_dtype(), x.sizes());
  at::Tensor out = model->forward(x, t, ctx, attention);
  (out * randn_seeded(out.sizes(), 3)).sum().backward();
  std::vector<at::Tensor> grads;
  if (sp != nullptr) {
    params.push_back(x);
    sp->all_reduce_gradients(params);
    params.pop_back();
  }
  for (const at::Tensor& p : params) {  // "full" leaves the sparse extras without a gradient
    grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}));
  }
  return Result{out.detach(), x.grad(), at::cat(grads)};
}

// The training case: 3 LoRA steps (rank 4) with `method` (vsa: sparsity 0 -> 0.5 over the steps,
// its gate trained too) on two samples of the DiT case's size (175 tokens), batch 1, 2 micro-batches
// a step, with or without gradient checkpointing. `cancel_before` > 0: the caller cancels before
// that step (with `sp`, only on rank 1, which all ranks must follow). `checkpoint_dir`: where the
// resumable checkpoint goes.
struct TrainOutcome {
  at::Tensor losses;   // [steps done]
  at::Tensor trained;  // every adapter and the gates, flattened and concatenated in name order
  bool cancelled = false;
  std::string checkpoint;
};

inline TrainOutcome train(const std::string& method, vidgraph::plugin::AttentionBackend* backend,
                          vidgraph::parallel::SequenceParallel* sp, bool checkpointing, int cancel_before = 0,
                          const std::string& checkpoint_dir = "") {
  vidgraph::wan::WanModel model = vidgraph::wan::wan_make_model(config(6), 7);
  std::vector<vidgraph::train::TrainingSample> samples;
  for (uint64_t i = 0; i < 2; ++i) {
    samples.push_back({randn_seeded({4, 5, 10, 14}, 10 + i), randn_seeded({3, 16}, 20 + i), i == 1, at::Tensor(), "clip"});
  }
  vidgraph::train::TrainOptions o;
  o.lora.rank = 4;
  o.method = method;
  o.sparsity = {0.0, 0.5, 2};
  o.steps = 3;
  o.accumulation = 2;
  o.lr = 1e-3;
  o.seed = 5;
  o.checkpointing = checkpointing;
  o.checkpoint_dir = checkpoint_dir;
  o.sequence_parallel = sp;
  int step = 0;
  o.is_cancelled = [&] { return ++step == cancel_before && (sp == nullptr || sp->rank() == 1); };
  const vidgraph::train::TrainResult r = vidgraph::train::train(*model, backend, samples, o);
  std::vector<at::Tensor> trained;
  for (auto& [name, linear] : vidgraph::wan::wan_linears_by_weight(*model)) {
    if (linear->adapter.attached()) {
      trained.push_back(linear->adapter.down.detach().reshape({-1}));
      trained.push_back(linear->adapter.up.detach().reshape({-1}));
    }
    if (name.find("to_gate_compress") != std::string::npos) trained.push_back(linear->weight.detach().reshape({-1}));
  }
  return {at::tensor(r.losses), at::cat(trained), r.cancelled, r.checkpoint_path};
}

}  // namespace parallel_case
