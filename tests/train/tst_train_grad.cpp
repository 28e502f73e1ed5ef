// Adapters, the objective and gradients: LoRA == merged weights, finite differences in float64,
// checkpointing == no checkpointing.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/square.h>
#include <c10/core/GradMode.h>

#include "models/sampling/flow_schedule.h"
#include "models/train/block_checkpoint.h"
#include "models/train/lora.h"
#include "models/train/objective.h"
#include "models/train/sparse_extras.h"
#include "models/wan/wan_tiny.h"
#include "train_fixtures.h"
#include "tst_train.h"

using namespace vidgraph;
using namespace train_test;

namespace {

// Gives every attached adapter a random `up` (a fresh adapter's is zero: the merged check and the
// down gradients would be trivial).
void randomise_up(wan::WanModelImpl& model, uint64_t seed) {
  int i = 0;
  for (const auto& m : train::attached_lora_modules(model)) {
    m.linear->adapter.up = randn_seeded(m.linear->adapter.up.sizes(), seed + i++) * 0.2;
  }
}

wan::AttentionChoice run_for(const std::string& method) {
  wan::AttentionChoice run;
  run.backend = tst_train::backend();
  run.method = method;
  if (method != "full") {
    run.params = small_tiles();
    run.params["sparsity"] = 0.5;
  }
  return run;
}

struct GradCase {
  wan::WanModel model{nullptr};
  std::vector<at::Tensor> trained;
  train::FlowExample example;
  at::Tensor context;
};

// The tiny model (in `dtype`) with the extras of `method` (random, so that every branch carries
// signal) and, for LoRA, adapters with random up; the trained tensors require grad.
GradCase make_grad_case(const std::string& method, bool lora, at::ScalarType dtype) {
  GradCase g;
  g.model = wan::wan_make_model(small_config(), 7);
  const auto methods = tst_train::backend()->methods();
  const auto need = train::sparse_extras_for(*plugin::find_method(methods, method));
  train::add_sparse_extras(*g.model, need.gate_compress, need.proj_l);
  int seed = 500;
  for (auto& [name, p] : train::sparse_extra_parameters(*g.model, need)) {
    c10::NoGradGuard no_grad;
    p.copy_(randn_seeded(p.sizes(), seed++) * 0.1);
  }
  g.model->to(dtype);
  if (lora) {
    train::LoraOptions lo;
    lo.rank = 4;
    lo.alpha = 8;
    lo.targets = {"self_attn.*", "cross_attn.q", "ffn.0"};
    train::attach_lora(*g.model, lo, 3);
    randomise_up(*g.model, 40);
    for (const auto& m : train::attached_lora_modules(*g.model)) {
      m.linear->adapter.down = m.linear->adapter.down.to(dtype).requires_grad_(true);
      m.linear->adapter.up = m.linear->adapter.up.to(dtype).requires_grad_(true);
      g.trained.push_back(m.linear->adapter.down);
      g.trained.push_back(m.linear->adapter.up);
    }
    for (auto& [name, p] : train::sparse_extra_parameters(*g.model, need)) {
      g.trained.push_back(p.requires_grad_(true));
    }
  } else {
    for (auto& [name, p] : wan::wan_named_parameters(*g.model)) {
      g.trained.push_back(p.requires_grad_(true));
    }
  }
  at::Generator gen = at::detail::createCPUGenerator(11);
  train::TrainingSample s = make_sample(1, 4, /*image_to_video=*/true);
  g.example = train::make_flow_example(s.latent, true, 5.0, 1, gen);
  g.context = s.context.to(dtype);
  return g;
}

// The case's run of `attention`. The model was converted to the case's dtype after it was made: its
// activations are the context's dtype. Keep the run alive until the backward (checkpointing
// recomputes the blocks with it).
wan::AttentionRun run_of(const GradCase& g, const wan::AttentionChoice& attention) {
  return attention.prepare(g.model->config(), g.model->device(), g.context.scalar_type(),
                           g.example.x_t.unsqueeze(0).sizes());
}

at::Tensor case_loss(GradCase& g, const wan::AttentionRun& run, bool checkpointing) {
  const at::Tensor x = g.example.x_t.to(g.context.scalar_type()).unsqueeze(0);
  const at::Tensor pred =
      train::training_forward(*g.model, x, g.example.t.unsqueeze(0), g.context.unsqueeze(0), run, checkpointing);
  return train::flow_loss(pred[0], g.example);
}

}  // namespace

void tst_train::loraLayerEqualsMergedWeights() {
  wan::WanLinear layer(wan::WanLinearOptions(12, 10));
  {
    c10::NoGradGuard no_grad;
    layer->weight.copy_(randn_seeded({10, 12}, 1));
    layer->bias.copy_(randn_seeded({10}, 2));
  }
  const at::Tensor x = randn_seeded({3, 5, 12}, 3);
  const at::Tensor base = layer->forward(x);
  layer->adapter.down = randn_seeded({4, 12}, 4);
  layer->adapter.up = randn_seeded({10, 4}, 5);
  layer->adapter.scale = 0.5 * 16.0 / 4.0;  // strength 0.5, alpha 16, rank 4
  const at::Tensor merged_w = layer->weight + at::matmul(layer->adapter.up, layer->adapter.down) * 2.0;
  const at::Tensor expected = at::linear(x, merged_w, layer->bias);
  QVERIFY2(rel_err(layer->forward(x), expected) < 1e-6, "adapter output != merged weights");
  QVERIFY(rel_err(layer->forward(x), base) > 1e-2);  // the adapter does something
  layer->adapter = wan::WanLinearAdapter{};
  QVERIFY(layer->forward(x).equal(base));  // detached: exactly the base layer again
}

void tst_train::loraModelEqualsMergedModel() {
  wan::WanModel model = wan::wan_make_model(small_config(), 9);
  wan::WanModel merged = wan::wan_make_model(small_config(), 9);
  train::LoraOptions lo;
  lo.rank = 4;
  lo.alpha = 2;
  lo.targets = {"self_attn.*", "cross_attn.*", "ffn.2"};
  const auto modules = train::attach_lora(*model, lo, 1);
  QCOMPARE(static_cast<int>(modules.size()), 2 * 9);
  randomise_up(*model, 70);
  {
    c10::NoGradGuard no_grad;
    auto merged_linears = train::wan_named_linears(*merged);
    for (const auto& m : modules) {
      for (auto& [name, linear] : merged_linears) {
        if (name == m.name) {
          const auto& a = m.linear->adapter;
          linear->weight.add_(at::matmul(a.up, a.down) * (lo.alpha / lo.rank));
        }
      }
    }
  }
  const at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 2);
  const at::Tensor t = at::full({1, 4}, 700.0f);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 3);
  const at::Tensor a = model->forward(x, t, ctx, wan::AttentionRun{});
  const at::Tensor b = merged->forward(x, t, ctx, wan::AttentionRun{});
  QVERIFY2(rel_err(a, b) < 1e-5, qPrintable(QString::number(rel_err(a, b))));
  train::detach_lora(*model);
  QVERIFY(rel_err(model->forward(x, t, ctx, wan::AttentionRun{}), b) > 1e-3);
}

void tst_train::loraTargetsByPattern() {
  wan::WanModel model = wan::wan_make_model(small_config(), 1);
  auto names = [&](std::vector<std::string> targets) {
    train::LoraOptions lo;
    lo.targets = std::move(targets);
    std::vector<std::string> out;
    for (const auto& m : train::lora_target_modules(*model, lo)) out.push_back(m.name);
    return out;
  };
  QCOMPARE(names({}), (std::vector<std::string>{"blocks.0.self_attn.q", "blocks.0.self_attn.k", "blocks.0.self_attn.v",
                                                 "blocks.0.self_attn.o", "blocks.1.self_attn.q", "blocks.1.self_attn.k",
                                                 "blocks.1.self_attn.v", "blocks.1.self_attn.o"}));
  QCOMPARE(names({"ffn.0", "blocks.1.ffn.2"}),
           (std::vector<std::string>{"blocks.0.ffn.0", "blocks.1.ffn.0", "blocks.1.ffn.2"}));
  QCOMPARE(static_cast<int>(names({"cross_attn.*"}).size()), 8);
  // Sparse extras are never adapter targets, even under a wildcard.
  train::add_sparse_extras(*model, true, true);
  QCOMPARE(static_cast<int>(names({"self_attn.*"}).size()), 8);
  try {
    names({"self_attn.qq"});
    QFAIL("a pattern matching nothing was accepted");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("'self_attn.qq' matches no linear layer") != std::string::npos, e.what());
  }
}

void tst_train::gradientsMatchFiniteDifferences_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<bool>("lora");
  for (const char* m : {"full", "vsa", "sla_star"}) {
    QTest::newRow((std::string(m) + " lora").c_str()) << QString(m) << true;
    QTest::newRow((std::string(m) + " full").c_str()) << QString(m) << false;
  }
}

void tst_train::gradientsMatchFiniteDifferences() {
  QFETCH(QString, method);
  QFETCH(bool, lora);
  GradCase g = make_grad_case(method.toStdString(), lora, at::kDouble);
  const wan::AttentionRun run = run_of(g, run_for(method.toStdString()));
  case_loss(g, run, false).backward();
  for (int dir = 0; dir < 3; ++dir) {
    std::vector<at::Tensor> d;  // a random direction of unit norm over all trained tensors
    double norm2 = 0;
    for (size_t i = 0; i < g.trained.size(); ++i) {
      d.push_back(randn_seeded(g.trained[i].sizes(), 1000 * dir + i, at::kDouble));
      norm2 += d.back().square().sum().item<double>();
    }
    double analytic = 0;
    for (size_t i = 0; i < g.trained.size(); ++i) {
      d[i] /= std::sqrt(norm2);
      QVERIFY2(g.trained[i].grad().defined(), "a trained tensor got no gradient");
      analytic += (g.trained[i].grad() * d[i]).sum().item<double>();
    }
    const double eps = 1e-5;
    auto loss_at = [&](double step) {
      c10::NoGradGuard no_grad;
      for (size_t i = 0; i < g.trained.size(); ++i) g.trained[i].add_(d[i] * step);
      const double l = case_loss(g, run, false).item<double>();
      for (size_t i = 0; i < g.trained.size(); ++i) g.trained[i].sub_(d[i] * step);
      return l;
    };
    const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
    const double err = std::abs(numeric - analytic) / std::max(std::abs(numeric), 1e-12);
    QVERIFY2(err < 1e-6, qPrintable(QString("direction %1: analytic %2, numeric %3, rel err %4")
                                        .arg(dir).arg(analytic, 0, 'g', 12).arg(numeric, 0, 'g', 12).arg(err)));
  }
}

void tst_train::checkpointingGivesSameGradients_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<bool>("lora");
  QTest::newRow("full lora") << "full" << true;
  QTest::newRow("vsa full") << "vsa" << false;
  QTest::newRow("sla_star lora") << "sla_star" << true;
}

void tst_train::checkpointingGivesSameGradients() {
  QFETCH(QString, method);
  QFETCH(bool, lora);
  GradCase plain = make_grad_case(method.toStdString(), lora, at::kFloat);
  GradCase ckpt = make_grad_case(method.toStdString(), lora, at::kFloat);
  const wan::AttentionRun run = run_of(plain, run_for(method.toStdString()));
  const at::Tensor lp = case_loss(plain, run, false);
  const at::Tensor lc = case_loss(ckpt, run, true);
  QCOMPARE(lc.item<double>(), lp.item<double>());
  lp.backward();
  lc.backward();
  QCOMPARE(ckpt.trained.size(), plain.trained.size());
  for (size_t i = 0; i < plain.trained.size(); ++i) {
    QVERIFY(plain.trained[i].grad().defined() && ckpt.trained[i].grad().defined());
    const double err = rel_err(ckpt.trained[i].grad(), plain.trained[i].grad());
    QVERIFY2(err < 1e-6, qPrintable(QString("tensor %1: rel err %2").arg(i).arg(err)));
  }
}

void tst_train::objectiveFormulas() {
  const train::TrainingSample s = make_sample(2, 3, true);
  at::Generator gen = at::detail::createCPUGenerator(5);
  const train::FlowExample ex = train::make_flow_example(s.latent, true, 5.0, 1, gen);
  at::Generator again = at::detail::createCPUGenerator(5);
  const double u = at::rand({1}, again, at::TensorOptions().dtype(at::kDouble)).item<double>();
  const at::Tensor noise = at::randn(s.latent.sizes(), again, at::TensorOptions().dtype(at::kFloat));
  const double sigma = 5.0 * u / (1.0 + 4.0 * u);
  QVERIFY(std::abs(ex.sigma - sigma) < 1e-12);
  QVERIFY(ex.target.equal(noise - s.latent));
  const at::Tensor expected = s.latent * (1 - sigma) + noise * sigma;
  QVERIFY(rel_err(ex.x_t.narrow(1, 1, 2), expected.narrow(1, 1, 2)) < 1e-6);
  QVERIFY(ex.x_t.select(1, 0).equal(s.latent.select(1, 0)));  // the clean image frame
  QCOMPARE(ex.t.size(0), int64_t{3});
  QCOMPARE(ex.t[0].item<double>(), 0.0);
  QVERIFY(std::abs(ex.t[1].item<double>() - 1000 * sigma) < 1e-3);
  // Frame 0 carries no loss: a prediction right everywhere else has loss 0.
  at::Tensor pred = ex.target.clone();
  pred.select(1, 0).fill_(100.0);
  QCOMPARE(train::flow_loss(pred, ex).item<double>(), 0.0);
  pred.select(1, 2).add_(1.0);
  QVERIFY(std::abs(train::flow_loss(pred, ex).item<double>() - 0.5) < 1e-6);  // half the loss frames off by 1
  // One expert's side of the boundary: the s range maps onto [0.875, 1] (high) and [0, 0.875] (low)
  // through the shift, and every draw lands there.
  const auto high = train::flow_s_range(0.875, 1.0, 5.0);
  QVERIFY(std::abs(sampling::flow_shift(high.first, 5.0) - 0.875) < 1e-12);
  QCOMPARE(high.second, 1.0);
  const auto low = train::flow_s_range(0.0, 0.875, 5.0);
  QCOMPARE(low.first, 0.0);
  QCOMPARE(low.second, high.first);
  for (int seed = 0; seed < 50; ++seed) {
    at::Generator g = at::detail::createCPUGenerator(seed);
    QVERIFY(train::make_flow_example(s.latent, true, 5.0, 1, g, high.first, high.second).sigma >= 0.875 - 1e-12);
    at::Generator h = at::detail::createCPUGenerator(seed);
    QVERIFY(train::make_flow_example(s.latent, true, 5.0, 1, h, low.first, low.second).sigma <= 0.875 + 1e-12);
  }
}
