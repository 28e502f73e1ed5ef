// The training loop: overfitting, resume / cancel, step reports and schedules, option errors.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <cmath>
#include <tuple>

#include <nlohmann/json.hpp>

#include "models/io/safetensors.h"
#include "models/train/block_checkpoint.h"
#include "models/train/objective.h"
#include "models/wan/wan_block.h"
#include "models/wan/wan_tiny.h"
#include "train_fixtures.h"
#include "tst_train.h"

using namespace vidgraph;
using namespace train_test;

namespace {

// The real plugin, with its prepare() and forward() calls counted.
class CountingBackend : public plugin::AttentionBackend {
 public:
  explicit CountingBackend(plugin::AttentionBackend& real) : real_(real) {}
  std::vector<plugin::MethodInfo> methods() const override { return real_.methods(); }
  plugin::PrepareResult prepare(const plugin::PrepareRequest& r) override {
    ++prepares;
    return real_.prepare(r);
  }
  at::Tensor forward(const plugin::AttentionCall& call) override {
    ++calls;
    return real_.forward(call);
  }
  plugin::AttentionResult forward_with_stats(const plugin::AttentionCall& call) override {
    ++calls;
    return real_.forward_with_stats(call);
  }
  void shutdown() override {}
  int prepares = 0;
  int calls = 0;

 private:
  plugin::AttentionBackend& real_;
};

train::TrainOptions base_options(const std::string& method) {
  train::TrainOptions o;
  o.method = method;
  if (method != "full") {
    o.method_params = small_tiles();
    o.sparsity = {0.0, 0.5, 4};
  }
  o.seed = 3;
  return o;
}

// Mean flow loss of the samples at fixed (t, noise) draws: the same before and after training.
double eval_loss(wan::WanModelImpl& model, const std::vector<train::TrainingSample>& samples,
                 const train::TrainOptions& o) {
  c10::NoGradGuard no_grad;
  wan::AttentionChoice attention{tst_train::backend(), o.method, o.method_params};
  if (o.method != "full") attention.params["sparsity"] = o.sparsity.target;
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    for (int draw = 0; draw < 4; ++draw) {
      at::Generator gen = at::detail::createCPUGenerator(9000 + 10 * i + draw);
      const at::Tensor& condition = samples[i].condition;
      const auto ex = train::make_flow_example(samples[i].latent, samples[i].image_to_video && !condition.defined(),
                                               o.shift, 1, gen);
      const wan::AttentionRun run =
          attention.prepare(model.config(), model.device(), model.compute_dtype(), ex.x_t.sizes());
      const at::Tensor x = train::with_condition(ex.x_t, condition);
      const at::Tensor pred = model.forward(x.unsqueeze(0), ex.t.unsqueeze(0), samples[i].context.unsqueeze(0), run);
      sum += train::flow_loss(pred[0], ex).item<double>();
      ++n;
    }
  }
  return sum / n;
}

std::vector<at::Tensor> adapter_tensors(wan::WanModelImpl& model) {
  std::vector<at::Tensor> out;
  for (const auto& m : train::attached_lora_modules(model)) {
    out.push_back(m.linear->adapter.down.clone());
    out.push_back(m.linear->adapter.up.clone());
  }
  for (auto& [name, p] : wan::wan_named_parameters(model)) {
    if (name.find("to_gate_compress") != std::string::npos || name.find("proj_l") != std::string::npos) {
      out.push_back(p.detach().clone());
    }
  }
  return out;
}

train::TrainOptions resume_options(const std::string& dir) {
  train::TrainOptions o = base_options("vsa");
  o.steps = 6;
  o.batch = 2;
  o.accumulation = 2;
  o.warmup_steps = 2;
  o.lr_schedule = "cosine";
  o.lr = 5e-3;
  o.lora.rank = 4;
  o.lora.alpha = 4;
  o.checkpointing = true;
  o.checkpoint_dir = dir;
  return o;
}

// Full fine-tuning of two samples in one batch, long enough to overfit them.
train::TrainOptions overfit_options(const std::string& method, int steps) {
  train::TrainOptions o = base_options(method);
  o.mode = train::TrainMode::Full;
  o.steps = steps;
  o.batch = 2;
  o.lr = 4e-3;
  o.warmup_steps = 5;
  o.lr_schedule = "cosine";
  return o;
}

}  // namespace

void tst_train::overfitDropsLoss_data() {
  QTest::addColumn<QString>("method");
  QTest::newRow("full") << "full";
  QTest::newRow("vsa") << "vsa";
  QTest::newRow("sla_star") << "sla_star";
}

void tst_train::overfitDropsLoss() {
  QFETCH(QString, method);
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 5);
  const train::TrainOptions o = overfit_options(method.toStdString(), 70);
  const double before = eval_loss(*model, samples, o);
  const train::TrainResult r = train::train(*model, backend(), samples, o);
  const double after = eval_loss(*model, samples, o);
  qInfo("%s: evaluation loss %.4f -> %.4f", qPrintable(method), before, after);
  QCOMPARE(r.steps_done, 70);
  QCOMPARE(static_cast<int>(r.losses.size()), 70);
  QVERIFY2(after < 0.2 * before, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
  for (const auto& [name, p] : wan::wan_named_parameters(*model)) {
    QVERIFY2(!p.requires_grad(), name.c_str());  // inference after training builds no graph
  }
}

void tst_train::resumeIsBitIdentical() {
  const auto samples = make_samples(3);
  const std::string dir_a = temp_dir("resume-a"), dir_b = temp_dir("resume-b");
  wan::WanModel straight = wan::wan_make_model(small_config(), 4);
  const train::TrainResult a = train::train(*straight, backend(), samples, resume_options(dir_a));

  wan::WanModel first = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = resume_options(dir_b);
  o.save_every = 3;
  int calls = 0;
  o.on_step = [&](const train::TrainStep&) { ++calls; };
  o.is_cancelled = [&] { return calls == 4; };  // stop after step 4
  const train::TrainResult b = train::train(*first, backend(), samples, o);
  QVERIFY(b.cancelled);
  QCOMPARE(b.steps_done, 4);
  QVERIFY(std::filesystem::exists(dir_b + "/train-step-000003.safetensors"));
  QCOMPARE(QString::fromStdString(b.checkpoint_path), QString::fromStdString(dir_b + "/train-step-000004.safetensors"));

  for (const std::string& from : {dir_b + "/train-step-000003.safetensors", b.checkpoint_path}) {
    wan::WanModel resumed = wan::wan_make_model(small_config(), 4);
    train::TrainOptions ro = resume_options(temp_dir("resume-c"));
    ro.resume_from = from;
    const train::TrainResult c = train::train(*resumed, backend(), samples, ro);
    QCOMPARE(c.steps_done, 6);
    QCOMPARE(c.losses, a.losses);  // bit for bit, including the restored history
    const auto x = adapter_tensors(*straight), y = adapter_tensors(*resumed);
    QCOMPARE(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      QVERIFY2(x[i].equal(y[i]), qPrintable(QString("tensor %1 differs after resuming from %2").arg(i).arg(from.c_str())));
    }
  }
}

// A second run into the same folder writes its own names; the first run's checkpoint stays as it was.
void tst_train::anotherRunsCheckpointIsKept() {
  const auto samples = make_samples(2);
  const std::string dir = temp_dir("two-runs");
  auto options = [&](uint64_t seed) {
    train::TrainOptions o = base_options("full");
    o.steps = 2;
    o.seed = seed;
    o.checkpoint_dir = dir;
    return o;
  };
  wan::WanModel a = wan::wan_make_model(small_config(), 4);
  const train::TrainResult first = train::train(*a, backend(), samples, options(1));
  QCOMPARE(QString::fromStdString(first.checkpoint_path), QString::fromStdString(dir + "/train-step-000002.safetensors"));
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string before = bytes(first.checkpoint_path);
  wan::WanModel b = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = options(2);
  o.save_every = 1;
  const train::TrainResult second = train::train(*b, backend(), samples, o);
  QCOMPARE(QString::fromStdString(second.checkpoint_path),
           QString::fromStdString(dir + "/train-step-000002-2.safetensors"));
  QVERIFY(std::filesystem::exists(dir + "/train-step-000001.safetensors"));
  QVERIFY(bytes(first.checkpoint_path) == before);
  QVERIFY(bytes(second.checkpoint_path) != before);  // another seed: another state
}

void tst_train::cancelLeavesLoadableCheckpoint() {
  const auto samples = make_samples(2);
  const std::string dir = temp_dir("cancel");
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = base_options("sla_star");
  o.steps = 5;
  o.checkpoint_dir = dir;
  o.is_cancelled = [] { return true; };  // before the first step
  const train::TrainResult r = train::train(*model, backend(), samples, o);
  QVERIFY(r.cancelled);
  QCOMPARE(r.steps_done, 0);
  QVERIFY(r.losses.empty());
  const auto file = model_io::SafetensorsFile::open(r.checkpoint_path);
  QVERIFY(file.metadata().count("vidgraph_train_state") == 1);
  QVERIFY(file.contains("trained.blocks.0.self_attn.q.lora_down"));
  QVERIFY(file.contains("trained.blocks.1.self_attn.proj_l.weight"));
  // It resumes, and a checkpoint for other options is refused with the reason.
  o.is_cancelled = nullptr;
  o.resume_from = r.checkpoint_path;
  o.checkpoint_dir = temp_dir("cancel-2");
  wan::WanModel again = wan::wan_make_model(small_config(), 4);
  QCOMPARE(train::train(*again, backend(), samples, o).steps_done, 5);
  o.lora.rank = 8;
  try {
    train::train(*again, backend(), samples, o);
    QFAIL("a checkpoint of another LoRA rank was accepted");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("lora_rank") != std::string::npos, e.what());
  }
}

void tst_train::stepReportsAndSchedules() {
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = base_options("vsa");
  o.steps = 5;
  o.warmup_steps = 2;
  o.lr = 1e-3;
  o.lr_schedule = "cosine";
  o.grad_clip = 1e-4;  // always clips
  std::vector<train::TrainStep> steps;
  o.on_step = [&](const train::TrainStep& s) { steps.push_back(s); };
  std::map<std::string, at::Tensor> before;
  for (const auto& [name, p] : wan::wan_named_parameters(*model)) before[name] = p.detach().clone();
  train::train(*model, backend(), samples, o);
  QCOMPARE(static_cast<int>(steps.size()), 5);
  const double expected_lr[] = {5e-4, 1e-3, 1e-3, 0.5e-3 * (1 + std::cos(M_PI / 3)), 0.5e-3 * (1 + std::cos(2 * M_PI / 3))};
  for (int i = 0; i < 5; ++i) {
    QCOMPARE(steps[i].step, i + 1);
    QCOMPARE(steps[i].steps, 5);
    QVERIFY2(std::abs(steps[i].lr - expected_lr[i]) < 1e-12, qPrintable(QString::number(steps[i].lr)));
    QVERIFY(steps[i].grad_norm > 1e-4 && std::isfinite(steps[i].loss) && steps[i].seconds > 0);
    QVERIFY2(steps[i].peak_bytes > 0, "no peak memory reported");
  }
  // LoRA mode leaves the base weights untouched; the gate (added, as the tiny model has none) trains.
  int gates = 0;
  for (const auto& [name, p] : wan::wan_named_parameters(*model)) {
    if (before.count(name)) {
      QVERIFY2(p.equal(before[name]), name.c_str());
    } else {
      QVERIFY2(name.find("to_gate_compress") != std::string::npos, name.c_str());
      gates += p.abs().sum().item<double>() > 0;
    }
  }
  QCOMPARE(gates, 4);  // weight and bias of 2 blocks
}

// Self-attention is prepared once per sparsity value and latent shape, not at every layer call:
// with a constant schedule, the option check prepares both ends of it and the loop prepares once,
// while every block calls the plugin at every forward and at its recomputation under checkpointing.
void tst_train::trainingPreparesOncePerSparsity() {
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = base_options("vsa");
  o.sparsity = {0.5, 0.5, 0};
  o.steps = 3;
  o.checkpointing = true;
  CountingBackend counting(*backend());
  train::train(*model, &counting, samples, o);
  QCOMPARE(counting.prepares, 2 + 1);
  QCOMPARE(counting.calls, o.steps * int(small_config().num_layers) * 2);
}

void tst_train::bf16WeightsTrainThroughFp32Masters() {
  // bf16 matmul weights (as on a GPU): AdamW steps fp32 masters and copies them back; every
  // weight must move, the loss must fall, and the dtypes stay as the model was built.
  const auto samples = make_samples(2);
  wan::WanModelOptions mo;
  mo.config = small_config();
  mo.compute_dtype = at::kBFloat16;
  wan::WanModel model(mo);
  wan::wan_init_weights(*model, 5);
  std::map<std::string, at::Tensor> before;
  for (const auto& [name, p] : wan::wan_named_parameters(*model)) before[name] = p.detach().clone();
  train::TrainOptions o = base_options("full");
  o.mode = train::TrainMode::Full;
  o.steps = 30;
  o.batch = 2;
  o.lr = 4e-3;
  const train::TrainResult r = train::train(*model, backend(), samples, o);
  QCOMPARE(model->patch_embedding->weight.scalar_type(), at::kBFloat16);
  QCOMPARE(model->blocks[0]->as<wan::WanAttentionBlockImpl>()->modulation.scalar_type(), at::kFloat);
  int moved = 0;
  for (const auto& [name, p] : wan::wan_named_parameters(*model)) moved += !p.equal(before[name]);
  QCOMPARE(moved, static_cast<int>(before.size()));
  const double first = (r.losses[0] + r.losses[1]) / 2, last = (r.losses[28] + r.losses[29]) / 2;
  QVERIFY2(last < 0.7 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
}

void tst_train::captionDropoutTrainsOnTheEmptyContext() {
  // A dropped sample trains on the empty context with its own (t, noise) draw: at a dropout that
  // drops every draw, training equals training without dropout on samples whose context is the
  // empty one, loss for loss and weight for weight.
  const at::Tensor empty = randn_seeded({1, 16}, 77);
  auto run = [&](double dropout, bool contexts_empty, std::vector<double>* losses) {
    auto samples = make_samples(3);
    if (contexts_empty) {
      for (auto& s : samples) s.context = empty;
    }
    wan::WanModel model = wan::wan_make_model(small_config(), 4);
    train::TrainOptions o = base_options("vsa");
    o.steps = 4;
    o.batch = 2;
    o.lr = 5e-3;
    o.caption_dropout = dropout;
    o.empty_context = empty;
    *losses = train::train(*model, backend(), samples, o).losses;
    return adapter_tensors(*model);
  };
  std::vector<double> all_dropped, on_empty, none, half, half_again;
  const auto w_dropped = run(0.999999, false, &all_dropped);
  const auto w_empty = run(0.0, true, &on_empty);
  run(0.0, false, &none);
  run(0.5, false, &half);
  run(0.5, false, &half_again);
  QCOMPARE(all_dropped, on_empty);
  for (size_t i = 0; i < w_dropped.size(); ++i) QVERIFY(w_dropped[i].equal(w_empty[i]));
  QVERIFY(all_dropped != none);  // the context matters to the loss, so the check above can fail
  QCOMPARE(half, half_again);    // the draws follow the seed
  QVERIFY(half != none && half != all_dropped);

  // Out of range, or without the empty context, is refused before any work; so is resuming a
  // checkpoint trained with another dropout.
  auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  train::TrainOptions o = base_options("vsa");
  for (const auto& [dropout, context, message] :
       {std::tuple{1.0, empty, "Caption dropout must lie in [0, 1)"},
        std::tuple{0.2, at::Tensor(), "needs the empty prompt's text context [L, 16]"},
        std::tuple{0.2, empty.repeat({1, 2}), "needs the empty prompt's text context [L, 16]"}}) {
    o.caption_dropout = dropout;
    o.empty_context = context;
    try {
      train::train(*model, backend(), samples, o);
      QFAIL("bad caption dropout options were accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains(message), e.what());
    }
  }
  o.caption_dropout = 0.0;
  o.steps = 2;
  o.checkpoint_dir = temp_dir("dropout");
  const std::string checkpoint = train::train(*model, backend(), samples, o).checkpoint_path;
  wan::WanModel again = wan::wan_make_model(small_config(), 4);
  o.caption_dropout = 0.1;
  o.empty_context = empty;
  o.resume_from = checkpoint;
  try {
    train::train(*again, backend(), samples, o);
    QFAIL("a checkpoint trained without caption dropout resumed with it");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("caption_dropout") != std::string::npos, e.what());
  }
}

void tst_train::badOptionsAreRejected_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QString>("message");
  QTest::newRow("rank") << 0 << "LoRA rank must be at least 1";
  QTest::newRow("steps") << 1 << "at least 1 step";
  QTest::newRow("no samples") << 2 << "at least one sample";
  QTest::newRow("channels") << 3 << "latent channels; the model takes 4";
  QTest::newRow("context") << 4 << "needs a text context [L, 16]";
  QTest::newRow("i2v one frame") << 5 << "has 1 latent frame";
  QTest::newRow("schedule") << 6 << "Unknown learning-rate schedule 'linear'";
  QTest::newRow("no plugin") << 7 << "needs the attention plugin";
  QTest::newRow("sparsity param") << 8 << "through TrainOptions::sparsity";
  QTest::newRow("target") << 9 << "matches no linear layer";
  QTest::newRow("save_every") << 10 << "checkpoint_dir is empty";
  QTest::newRow("resume") << 11 << "does not exist";
  QTest::newRow("odd width") << 12 << "whole number of patches";
  // 256 x 1024 on two clips: each clip 131072 times a step, minutes per step for nothing.
  QTest::newRow("batch x accumulation") << 13 << "each of the 2 training samples about 131072 times";
  QTest::newRow("noise levels") << 14 << "0 <= sigma_min < sigma_max <= 1";
}

void tst_train::badOptionsAreRejected() {
  QFETCH(int, which);
  QFETCH(QString, message);
  auto samples = make_samples(2);
  train::TrainOptions o = base_options("vsa");
  plugin::AttentionBackend* b = backend();
  switch (which) {
    case 0: o.lora.rank = 0; break;
    case 1: o.steps = 0; break;
    case 2: samples.clear(); break;
    case 3: samples[0].latent = samples[0].latent.repeat({2, 1, 1, 1}); break;
    case 4: samples[1].context = samples[1].context.narrow(1, 0, 8); break;
    case 5: samples[1].latent = samples[1].latent.narrow(1, 0, 1); break;
    case 6: o.lr_schedule = "linear"; break;
    case 7: b = nullptr; break;
    case 8: o.method_params["sparsity"] = 0.5; break;
    case 9: o.lora.targets = {"attn.q"}; break;
    case 10: o.save_every = 2; break;
    case 11: o.resume_from = "/nonexistent/train-step-000001.safetensors"; break;
    case 12: samples[0].latent = samples[0].latent.narrow(3, 0, 7); break;
    case 13: o.batch = 256, o.accumulation = 1024; break;
    case 14: o.sigma_min = 0.9, o.sigma_max = 0.5; break;
  }
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  try {
    train::train(*model, b, samples, o);
    QFAIL("bad options were accepted");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains(message), e.what());
  }
  QVERIFY(train::attached_lora_modules(*model).empty());  // nothing was done before the check
}

// Wan2.2-I2V-A14B's samples carry their image conditioning, which the model takes beside x_t at every
// call (in_dim = out_dim + its channels): it trains, the conditioning reaches the model (another
// conditioning, another first loss), and the mismatches are refused by name before any step.
void tst_train::imageConditionedModelTrains() {
  wan::WanConfig c = small_config();
  c.in_dim = c.out_dim + 8;  // 4 mask channels + the 4-channel latent of the image
  auto conditioned = [](uint64_t seed) {
    auto samples = make_samples(2);
    for (auto& s : samples) {
      s.image_to_video = true;
      s.condition = randn_seeded({8, 4, 8, 8}, seed + s.name.size());
    }
    return samples;
  };
  const auto samples = conditioned(1);
  train::TrainOptions o = overfit_options("full", 60);
  wan::WanModel model = wan::wan_make_model(c, 5);
  const double before = eval_loss(*model, samples, o);
  train::train(*model, backend(), samples, o);
  const double after = eval_loss(*model, samples, o);
  QVERIFY2(after < 0.5 * before, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
  o.steps = 1;
  o.warmup_steps = 0;
  const double first_a = train::train(*wan::wan_make_model(c, 5), backend(), samples, o).losses.at(0);
  const double first_b = train::train(*wan::wan_make_model(c, 5), backend(), conditioned(2), o).losses.at(0);
  QVERIFY2(first_a != first_b, "the conditioning did not reach the model");
  auto refused = [&](const wan::WanConfig& config, std::vector<train::TrainingSample> s, const QString& message) {
    try {
      train::train(*wan::wan_make_model(config, 5), backend(), s, o);
      QFAIL("a mismatched sample was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains(message), e.what());
    }
  };
  auto bare = samples;
  bare[1].condition = at::Tensor();
  refused(c, bare, "has no image conditioning, which this model takes beside its latent (in_dim 12");
  refused(small_config(), samples, "carries image conditioning, which this model does not take");
  auto narrow = samples;
  narrow[0].condition = narrow[0].condition.narrow(0, 0, 5);
  refused(c, narrow, "does not match its latent");
}

// A checkpoint damaged after it was written (metadata not JSON, a field of the wrong type, NaN in a
// master or an AdamW moment) is refused at resume with a sentence naming the file and, for tensors,
// the tensor, instead of a raw JSON exception or a run that fails many steps later.
void tst_train::damagedCheckpointsAreNamed() {
  const auto samples = make_samples(2);
  train::TrainOptions o = base_options("full");
  o.steps = 2;
  o.checkpoint_dir = temp_dir("damaged");
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  const std::string good = train::train(*model, backend(), samples, o).checkpoint_path;
  const model_io::SafetensorsFile file = model_io::SafetensorsFile::open(good);
  const std::string state = file.metadata().at("vidgraph_train_state");
  // Rewrites the checkpoint with `meta` as its state and `poisoned` (if any) set to NaN.
  auto damaged = [&](const std::string& name, const std::string& meta, const std::string& poisoned) {
    model_io::NamedTensors tensors;
    for (const std::string& key : file.names()) {
      at::Tensor t = file.load(key);
      if (key == poisoned) t.view(-1)[0] = std::nan("");
      tensors.emplace_back(key, t);
    }
    const std::string path = o.checkpoint_dir + "/" + name + ".safetensors";
    model_io::save_safetensors(path, tensors, {{"vidgraph_train_state", meta}, {"format", "pt"}});
    return path;
  };
  std::string first_master, first_moment;
  for (const std::string& key : file.names()) {
    if (first_master.empty() && key.rfind("trained.", 0) == 0) first_master = key;
    if (first_moment.empty() && key.find(".exp_avg_sq") != std::string::npos) first_moment = key;
  }
  QVERIFY(!first_master.empty() && !first_moment.empty());
  nlohmann::json bad_step = nlohmann::json::parse(state);
  bad_step["step"] = "two";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {damaged("not-json", "{\"step\": 2,", ""), "metadata is not a JSON object"},
      {damaged("bad-step", bad_step.dump(), ""), "training state is damaged"},
      {damaged("nan-master", state, first_master), "'" + first_master + "' holds NaN or infinite values"},
      {damaged("nan-moment", state, first_moment), "'" + first_moment + "' holds NaN or infinite values"},
  };
  for (const auto& [path, message] : cases) {
    wan::WanModel again = wan::wan_make_model(small_config(), 4);
    train::TrainOptions ro = o;
    ro.checkpoint_dir = temp_dir("damaged-resume");
    ro.resume_from = path;
    try {
      train::train(*again, backend(), samples, ro);
      QFAIL(qPrintable(QString("resumed from the damaged %1").arg(path.c_str())));
    } catch (const std::runtime_error& e) {
      QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
  }
}
