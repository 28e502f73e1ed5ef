// Step distillation (models/train/distill.h) on the tiny DiT on the CPU with the real attention
// plugin: the DMD gradient and a whole first step against float64 references computed here from
// the formulas (each role's forward, the re-noising, the difference, its normalisation; the
// critic's flow-matching loss), one copy of the base weights across the roles, bit-identical
// resume, cancel, and the option errors.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/square.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <map>
#include <set>

#include "models/io/safetensors.h"
#include "models/train/adapter_sets.h"
#include "models/train/distill.h"
#include "models/train/objective.h"
#include "models/train/sparse_extras.h"
#include "models/wan/wan_tiny.h"
#include "plugins/api/plugin_loader.h"
#include "train_fixtures.h"

#include <QtTest/QtTest>

using namespace vidgraph;
using namespace train_test;

namespace {

plugin::LoadedPlugin* g_plugin = nullptr;
plugin::AttentionBackend* backend() { return &g_plugin->backend(); }

const std::vector<int64_t> kShape = {4, 4, 8, 8};

// The real plugin, recording for each self-attention call the method and which tensors the
// model's first q projection computes with at that moment (base weight, adapter down).
class WatchingBackend : public plugin::AttentionBackend {
 public:
  WatchingBackend(plugin::AttentionBackend& real, wan::WanLinearImpl* q) : real_(real), q_(q) {}
  std::vector<plugin::MethodInfo> methods() const override { return real_.methods(); }
  plugin::PrepareResult prepare(const plugin::PrepareRequest& r) override { return real_.prepare(r); }
  at::Tensor forward(const plugin::AttentionCall& call) override {
    record(call);
    return real_.forward(call);
  }
  plugin::AttentionResult forward_with_stats(const plugin::AttentionCall& call) override {
    record(call);
    return real_.forward_with_stats(call);
  }
  void shutdown() override {}
  struct Call {
    std::string method;
    const void* weight;
    const void* down;  // nullptr: no adapter
  };
  std::vector<Call> calls;

 private:
  void record(const plugin::AttentionCall& call) {
    calls.push_back({call.prepared->request.method, q_->weight.data_ptr(),
                     q_->adapter.attached() ? q_->adapter.down.data_ptr() : nullptr});
  }
  plugin::AttentionBackend& real_;
  wan::WanLinearImpl* q_;
};

std::vector<train::DistillPrompt> make_prompts(int count, bool with_image = false) {
  std::vector<train::DistillPrompt> out;
  for (int i = 0; i < count; ++i) {
    train::DistillPrompt p;
    p.context = randn_seeded({3, 16}, 200 + i);
    if (with_image && i % 2 == 1) p.first_frame = make_sample(i, 1).latent;  // [4, 1, 8, 8]
    p.name = "prompt " + std::to_string(i);
    out.push_back(p);
  }
  return out;
}

// Wan2.2-I2V-A14B's shape in small: the DiT takes 8 channels of image conditioning beside its latent.
wan::WanConfig conditioned_config() {
  wan::WanConfig c = small_config();
  c.in_dim = c.out_dim + 8;
  return c;
}

// Prompts whose clips carry that conditioning [8, 4, 8, 8] (the shape of kShape's frames).
std::vector<train::DistillPrompt> conditioned_prompts(uint64_t seed) {
  auto prompts = make_prompts(2);
  for (size_t i = 0; i < prompts.size(); ++i) prompts[i].condition = randn_seeded({8, 4, 8, 8}, seed + i);
  return prompts;
}

train::DistillOptions base_options(const std::string& method) {
  train::DistillOptions o;
  o.latent_shape = kShape;
  o.negative_context = randn_seeded({2, 16}, 300);
  o.guidance = 3.0;
  o.method = method;
  if (method != "full") {
    o.method_params = small_tiles();
    o.sparsity = {0.25, 0.5, 3};
  }
  o.student_lora.rank = 4;
  o.student_lora.alpha = 4;
  o.critic_lora.rank = 2;
  o.critic_lora.alpha = 4;
  o.critic_updates = 2;
  o.student_lr = o.critic_lr = 2e-3;
  o.seed = 5;
  return o;
}

// A float64 copy of `model` (same parameters, its extras included, its attached adapters).
wan::WanModel double_copy(wan::WanModelImpl& model) {
  wan::WanModel copy = wan::wan_make_model(small_config(), 1);
  train::add_sparse_extras(*copy, model.config().with_gate_compress, model.config().with_proj_l);
  std::map<std::string, at::Tensor> source;
  for (auto& [name, p] : wan::wan_named_parameters(model)) source[name] = p;
  {
    c10::NoGradGuard no_grad;
    for (auto& [name, p] : wan::wan_named_parameters(*copy)) p.copy_(source.at(name));
  }
  copy->to(at::kDouble);
  std::map<std::string, wan::WanLinearAdapter> adapters;
  for (const auto& m : train::attached_lora_modules(model)) adapters[m.name] = m.linear->adapter;
  for (auto& [name, linear] : train::wan_named_linears(*copy)) {
    if (auto it = adapters.find(name); it != adapters.end()) {
      linear->adapter = {it->second.down.detach().to(at::kDouble), it->second.up.detach().to(at::kDouble),
                         it->second.scale};
    }
  }
  return copy;
}

// The reference's forward in float64: x [C, F, h, w] at timestep t (frame 0 at 0 for i2v).
at::Tensor v64(wan::WanModelImpl& model, const wan::AttentionRun& run, const at::Tensor& x, double t, bool i2v,
               const at::Tensor& context) {
  c10::NoGradGuard no_grad;
  at::Tensor ts = at::full({x.size(1)}, t, at::TensorOptions().dtype(at::kFloat));
  if (i2v) ts[0] = 0.0;
  return model.forward(x.to(at::kDouble).unsqueeze(0), ts.unsqueeze(0), context.to(at::kDouble).unsqueeze(0), run)[0];
}

wan::AttentionRun run64(const wan::WanModelImpl& model, const std::string& method, const plugin::ParamMap& params) {
  return wan::AttentionChoice{backend(), method, params}.prepare(model.config(), model.device(), at::kDouble, kShape);
}

// The re-noising of a make_flow_example draw, from the same generator state, in float64:
// u, s = lo + (hi - lo) u, sigma = shift s / (1 + (shift - 1) s), noise; x_t = (1 - sigma) x + sigma noise.
struct Renoised {
  at::Tensor x_t, noise;
  double sigma;
};
Renoised renoise64(const at::Tensor& x, at::Generator gen, double shift, double lo, double hi, bool i2v) {
  const double u = at::rand({1}, gen, at::TensorOptions().dtype(at::kDouble)).item<double>();
  const double s = lo + (hi - lo) * u;
  Renoised r;
  r.sigma = shift * s / (1 + (shift - 1) * s);
  r.noise = at::randn(x.sizes(), gen, at::TensorOptions().dtype(at::kFloat)).to(at::kDouble);
  r.x_t = x.to(at::kDouble) * (1 - r.sigma) + r.noise * r.sigma;
  if (i2v) r.x_t.select(1, 0).copy_(x.select(1, 0));
  return r;
}

// The DMD2 gradient in float64 from the formulas: teacher with guidance, critic, x0's, normalised.
at::Tensor dmd64(wan::WanModelImpl& teacher, wan::WanModelImpl& critic, const wan::AttentionRun& full,
                 const at::Tensor& x, const Renoised& r, bool i2v, const at::Tensor& context,
                 const at::Tensor& negative, double guidance) {
  const double t = 1000.0 * r.sigma;
  const at::Tensor vc = v64(teacher, full, r.x_t, t, i2v, context);
  const at::Tensor vu = v64(teacher, full, r.x_t, t, i2v, negative);
  const at::Tensor v_real = vu + guidance * (vc - vu);
  const at::Tensor v_fake = v64(critic, full, r.x_t, t, i2v, context);
  const at::Tensor x0_real = r.x_t - r.sigma * v_real, x0_fake = r.x_t - r.sigma * v_fake;
  const int64_t f0 = i2v ? 1 : 0, n = x.size(1) - f0;
  const at::Tensor xd = x.to(at::kDouble);
  const at::Tensor norm = (xd.narrow(1, f0, n) - x0_real.narrow(1, f0, n)).abs().mean();
  at::Tensor g = at::zeros_like(xd);
  g.narrow(1, f0, n).copy_((x0_fake - x0_real).narrow(1, f0, n) / norm);
  return g;
}

// The student's chain of distill_draws in float64.
at::Tensor chain64(wan::WanModelImpl& student, const wan::AttentionRun& run, const train::DistillDraws& d,
                   const train::DistillPrompt& p, const std::vector<double>& steps) {
  const bool i2v = p.first_frame.defined();
  auto impose = [&](at::Tensor x) {
    if (i2v) x.select(1, 0).copy_(p.first_frame.select(1, 0));
    return x;
  };
  // A chain that starts below timestep 1000 (a low-noise expert) starts from the prompt's clip noised there.
  const double start = steps[0] / 1000;
  at::Tensor x = impose(start >= 1 ? d.noise.to(at::kDouble)
                                   : p.clip.to(at::kDouble) * (1 - start) + d.noise.to(at::kDouble) * start);
  for (int j = 0;; ++j) {
    const double sigma = steps[j] / 1000;
    const at::Tensor x0 = impose(x - sigma * v64(student, run, x, steps[j], i2v, p.context));
    if (j == d.exit_step) return x0;
    const double next = steps[j + 1] / 1000;
    x = impose(x0 * (1 - next) + d.step_noises[j].to(at::kDouble) * next);
  }
}

bool close(double a, double b, double tol) { return std::abs(a - b) <= tol * std::max(std::abs(b), 1e-12); }

std::vector<at::Tensor> student_tensors(wan::WanModelImpl& model) {
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

}  // namespace

class tst_distill : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void adapterSetsShareTheBaseWeights();
  void dmdGradientMatchesFloat64Reference_data();
  void dmdGradientMatchesFloat64Reference();
  void firstStepMatchesFloat64Reference_data();
  void firstStepMatchesFloat64Reference();
  void rolesRunOnOneCopyAndTeacherStaysIdentical();
  void sparseTeacherKeepsItsExtras();
  void regressionLossIsOptional();
  void resumeIsBitIdentical();
  void cancelWritesResumableCheckpoint();
  void badInputsAreRejected_data();
  void badInputsAreRejected();
  void imageConditionedExpertDistils();
};

void tst_distill::initTestCase() {
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  g_plugin = report.plugin;
}

void tst_distill::adapterSetsShareTheBaseWeights() {
  wan::WanModel model = wan::wan_make_model(small_config(), 3);
  train::AdapterSets sets(*model);
  train::LoraOptions lo;
  lo.rank = 2;
  sets.add("a", lo, 1);
  lo.rank = 3;
  lo.targets = {"self_attn.q", "ffn.0"};
  sets.add("b", lo, 2);
  QCOMPARE(sets.active(), std::string());
  QVERIFY(train::attached_lora_modules(*model).empty());
  std::map<std::string, const void*> weights;
  for (auto& [name, linear] : train::wan_named_linears(*model)) weights[name] = linear->weight.data_ptr();
  for (auto& [name, a] : sets.adapters("b")) a.up.copy_(randn_seeded(a.up.sizes(), 9) * 0.3);
  const at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 4);
  const at::Tensor t = at::full({1, 4}, 600.0f);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 5);
  const at::Tensor base = model->forward(x, t, ctx, wan::AttentionRun{});
  for (const std::string set : {"a", "b", ""}) {
    sets.activate(set);
    const auto attached = train::attached_lora_modules(*model);
    QCOMPARE(attached.size(), set.empty() ? size_t{0} : sets.adapters(set).size());
    for (size_t i = 0; i < attached.size(); ++i) {
      QCOMPARE(attached[i].name, sets.adapters(set)[i].first);
      QCOMPARE(attached[i].linear->adapter.down.data_ptr(), sets.adapters(set)[i].second.down.data_ptr());
    }
    for (auto& [name, linear] : train::wan_named_linears(*model)) QCOMPARE(linear->weight.data_ptr(), weights[name]);
  }
  sets.activate("a");
  QVERIFY(model->forward(x, t, ctx, wan::AttentionRun{}).equal(base));  // up = 0: the base
  sets.activate("b");
  const at::Tensor with_b = model->forward(x, t, ctx, wan::AttentionRun{});
  QVERIFY(rel_err(with_b, base) > 1e-3);
  {
    train::ActiveAdapters scope(sets, "");
    QVERIFY(model->forward(x, t, ctx, wan::AttentionRun{}).equal(base));
  }
  QCOMPARE(sets.active(), std::string("b"));
  QVERIFY(model->forward(x, t, ctx, wan::AttentionRun{}).equal(with_b));
  // A model that already carries an adapter is refused (it would be part of the teacher).
  try {
    train::AdapterSets again(*model);
    QFAIL("a model with an adapter was accepted");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains("merge it into the weights"), e.what());
  }
}

void tst_distill::dmdGradientMatchesFloat64Reference_data() {
  QTest::addColumn<bool>("i2v");
  QTest::addColumn<double>("guidance");
  QTest::newRow("t2v guidance 3") << false << 3.0;
  QTest::newRow("i2v guidance 4.5") << true << 4.5;
  QTest::newRow("t2v no guidance") << false << 1.0;
}

void tst_distill::dmdGradientMatchesFloat64Reference() {
  QFETCH(bool, i2v);
  QFETCH(double, guidance);
  wan::WanModel model = wan::wan_make_model(small_config(), 7);
  train::AdapterSets sets(*model);
  train::LoraOptions lo;
  lo.rank = 4;
  lo.targets = {"self_attn.*", "cross_attn.q", "ffn.0"};
  sets.add("critic", lo, 3);
  sets.add("student", lo, 4);
  for (auto& [name, a] : sets.adapters("critic")) a.up.copy_(randn_seeded(a.up.sizes(), 20) * 0.3);
  for (auto& [name, a] : sets.adapters("student")) a.up.copy_(randn_seeded(a.up.sizes(), 21) * 0.3);
  sets.activate("student");
  const train::DistillPrompt p = make_prompts(1)[0];
  const at::Tensor negative = randn_seeded({2, 16}, 300);
  at::Tensor x = randn_seeded(kShape, 8) * 0.7;
  if (i2v) x.select(1, 0).copy_(make_sample(3, 1).latent.select(1, 0));
  const at::Tensor f32x = x;
  at::Generator gen = at::detail::createCPUGenerator(12);
  const train::FlowExample noisy = train::make_flow_example(x, i2v, 5.0, 1, gen, 0.02, 0.98);
  const wan::AttentionRun full = wan::AttentionChoice{backend(), "full", {}}.prepare(
      model->config(), model->device(), at::kFloat, kShape);
  const train::DmdGradient g = train::dmd_gradient(*model, sets, full, f32x, noisy, p.context, negative, at::Tensor(), guidance);
  QCOMPARE(sets.active(), std::string("student"));  // restored

  // Reference: the teacher is the bare base, the critic the base with the critic's adapters.
  sets.activate("");
  wan::WanModel teacher64 = double_copy(*model);
  sets.activate("critic");
  wan::WanModel critic64 = double_copy(*model);
  const wan::AttentionRun full64 = run64(*teacher64, "full", {});
  const Renoised r = renoise64(x, at::detail::createCPUGenerator(12), 5.0, 0.02, 0.98, i2v);
  QVERIFY(std::abs(r.sigma - noisy.sigma) < 1e-12);
  const at::Tensor ref = dmd64(*teacher64, *critic64, full64, x, r, i2v, p.context, negative, guidance);
  const double err = rel_err(g.grad, ref);
  qInfo("DMD gradient: |ref| %.4f, rel err %.2e", ref.norm().item<double>(), err);
  QVERIFY2(err < 1e-4, qPrintable(QString("rel err %1").arg(err)));
  QVERIFY(ref.norm().item<double>() > 1e-2);  // a non-trivial gradient, so the check can fail
  if (i2v) QCOMPARE(g.grad.select(1, 0).abs().max().item<double>(), 0.0);
  // The normalisation: mean |x - x0_teacher| over the loss frames is 1 / that of the raw difference.
  const int64_t f0 = i2v ? 1 : 0;
  const at::Tensor raw = (g.x0_critic - g.x0_teacher).narrow(1, f0, 4 - f0);
  const double scale = (x - g.x0_teacher).narrow(1, f0, 4 - f0).abs().mean().item<double>();
  QVERIFY(rel_err(g.grad.narrow(1, f0, 4 - f0), raw / scale) < 1e-6);
}

void tst_distill::firstStepMatchesFloat64Reference_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<bool>("i2v");
  QTest::addColumn<bool>("random_exit");
  QTest::addColumn<QString>("expert");
  QTest::newRow("full student") << "full" << false << false << "";
  QTest::newRow("vsa student, random exit") << "vsa" << false << true << "";
  QTest::newRow("sla_star student, i2v") << "sla_star" << true << false << "";
  QTest::newRow("high-noise expert") << "full" << false << true << "high";
  QTest::newRow("low-noise expert, from a clip") << "vsa" << false << false << "low";
}

// One whole step of distill() against the formulas: at step 1 the student and the critic are the
// base (fresh adapters have up = 0, fresh extras are 0), so the generator update is reproducible
// from the base model and the draws; the critic update runs on a sample of the student as it is
// after the generator update, i.e. as distill() returns it (1 step).
void tst_distill::firstStepMatchesFloat64Reference() {
  QFETCH(QString, method);
  QFETCH(bool, i2v);
  QFETCH(bool, random_exit);
  QFETCH(QString, expert);
  auto prompts = make_prompts(1);
  if (i2v) prompts[0].first_frame = make_sample(2, 1).latent;
  train::DistillOptions o = base_options(method.toStdString());
  // One A14B expert: its side of the boundary 0.875 for the steps, the re-noising and the critic.
  if (expert == "high") {
    o.sigma_min = 0.875;
    o.student_timesteps = {1000, 937.5, 900};
  } else if (expert == "low") {
    o.sigma_max = 0.875;
    o.student_timesteps = {850, 600, 300};
    prompts[0].clip = make_sample(5, 4).latent;  // [4, 4, 8, 8]
  }
  const std::pair<double, double> side = train::flow_s_range(o.sigma_min, o.sigma_max, o.shift);
  const double renoise_lo = std::max(o.renoise_min, side.first), renoise_hi = std::min(o.renoise_max, side.second);
  o.steps = 1;
  o.critic_updates = 1;
  o.random_exit = random_exit;
  o.checkpointing = method == "vsa";
  wan::WanModel model = wan::wan_make_model(small_config(), 11);
  wan::WanModel base64 = double_copy(*model);
  std::vector<train::DistillStep> steps;
  o.on_step = [&](const train::DistillStep& s) { steps.push_back(s); };
  train::distill(*model, backend(), prompts, o);
  QCOMPARE(steps.size(), size_t{1});

  plugin::ParamMap student_params = o.method_params;
  if (method != "full") student_params["sparsity"] = o.sparsity.start;
  QCOMPARE(steps[0].sparsity, method == "full" ? 0.0 : o.sparsity.start);
  // Generator update: student = teacher's base without guidance, critic = base.
  train::DistillDraws d = train::distill_draws(o, 1, 1, 0);
  QCOMPARE(steps[0].exit_step, d.exit_step);
  if (!random_exit) QCOMPARE(d.exit_step, 2);
  const wan::AttentionRun full64 = run64(*base64, "full", {});
  train::add_sparse_extras(*base64, method != "full", method == "sla_star");  // zero: as fresh ones
  base64->to(at::kDouble);
  const wan::AttentionRun student64 = run64(*base64, method.toStdString(), student_params);
  const at::Tensor x = chain64(*base64, student64, d, prompts[0], o.student_timesteps);
  const Renoised r = renoise64(x, d.generator, o.shift, renoise_lo, renoise_hi, i2v);
  QVERIFY(std::abs(steps[0].timestep - 1000 * r.sigma) < 1e-9);
  QVERIFY(r.sigma >= o.sigma_min && r.sigma <= o.sigma_max);
  const at::Tensor g = dmd64(*base64, *base64, full64, x, r, i2v, prompts[0].context, o.negative_context, o.guidance);
  const int64_t f0 = i2v ? 1 : 0;
  const double loss = 0.5 * g.narrow(1, f0, 4 - f0).square().mean().item<double>();
  qInfo("step 1: generator loss %.6g (ref %.6g), |g| %.6g (ref %.6g)", steps[0].generator_loss, loss,
        steps[0].dmd_grad_norm, g.norm().item<double>());
  QVERIFY2(close(steps[0].dmd_grad_norm, g.norm().item<double>(), 1e-4), "DMD gradient norm != reference");
  QVERIFY2(close(steps[0].generator_loss, loss, 1e-4), "generator loss != 0.5 mean g^2");
  QVERIFY(loss > 1e-3);

  // Critic update: the flow-matching loss of the (fresh = base) critic on the updated student's sample.
  wan::WanModel student_after = double_copy(*model);  // the student's adapters and extras as trained
  const wan::AttentionRun student_after64 = run64(*student_after, method.toStdString(), student_params);
  train::DistillDraws dc = train::distill_draws(o, 1, 1, 1);
  const at::Tensor xc = chain64(*student_after, student_after64, dc, prompts[0], o.student_timesteps);
  const Renoised rc = renoise64(xc, dc.generator, o.shift, side.first, side.second, i2v);
  const at::Tensor v = v64(*base64, full64, rc.x_t, 1000.0 * rc.sigma, i2v, prompts[0].context);
  const double critic_loss = (v - (rc.noise - xc)).narrow(1, f0, 4 - f0).square().mean().item<double>();
  qInfo("step 1: critic loss %.6g (ref %.6g)", steps[0].critic_loss, critic_loss);
  QVERIFY2(close(steps[0].critic_loss, critic_loss, 1e-4), "critic loss != flow-matching loss");
  QVERIFY(steps[0].student_grad_norm > 0 && steps[0].critic_grad_norm > 0);
}

void tst_distill::rolesRunOnOneCopyAndTeacherStaysIdentical() {
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  std::map<std::string, at::Tensor> before;
  std::map<std::string, const void*> pointers;
  for (auto& [name, p] : wan::wan_named_parameters(*model)) {
    before[name] = p.detach().clone();
    pointers[name] = p.data_ptr();
  }
  const at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 4);
  const at::Tensor t = at::full({1, 4}, 600.0f);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 5);
  const wan::AttentionRun full =
      wan::AttentionChoice{backend(), "full", {}}.prepare(model->config(), model->device(), at::kFloat, kShape);
  const at::Tensor teacher_before = model->forward(x, t, ctx, full);

  wan::WanLinearImpl* q = nullptr;
  for (auto& [name, linear] : train::wan_named_linears(*model)) {
    if (name == "blocks.0.self_attn.q") q = linear;
  }
  QVERIFY(q != nullptr);
  WatchingBackend watching(*backend(), q);
  train::DistillOptions o = base_options("sla_star");
  o.steps = 2;
  o.checkpointing = true;
  int steps = 0;
  o.on_step = [&](const train::DistillStep&) {
    ++steps;
    for (auto& [name, p] : wan::wan_named_parameters(*model)) {
      if (pointers.count(name)) QCOMPARE(p.data_ptr(), pointers[name]);
    }
  };
  const train::DistillResult r = train::distill(*model, &watching, make_prompts(3), o);
  QCOMPARE(steps, 2);
  QCOMPARE(r.steps_done, 2);
  // Every role's forward ran through the same base tensor; the teacher with no adapter, the critic
  // with one set (full attention), the student with another (sla_star).
  std::set<const void*> critic_downs, student_downs;
  int teacher_calls = 0;
  for (const auto& c : watching.calls) {
    QCOMPARE(c.weight, pointers["blocks.0.self_attn.q.weight"]);
    if (c.method == "sla_star") {
      QVERIFY(c.down != nullptr);
      student_downs.insert(c.down);
    } else if (c.down == nullptr) {
      QCOMPARE(c.method, std::string("full"));
      ++teacher_calls;
    } else {
      critic_downs.insert(c.down);
    }
  }
  QCOMPARE(student_downs.size(), size_t{1});
  QCOMPARE(critic_downs.size(), size_t{1});
  QVERIFY(*student_downs.begin() != *critic_downs.begin());
  QVERIFY(teacher_calls > 0);
  // The model now computes the student; its base parameters are bit-identical, the extras are new.
  QCOMPARE(train::attached_lora_modules(*model).front().linear->adapter.down.data_ptr(), *student_downs.begin());
  for (auto& [name, p] : wan::wan_named_parameters(*model)) {
    if (before.count(name)) {
      QVERIFY2(p.equal(before[name]) && p.data_ptr() == pointers[name], name.c_str());
    } else {
      QVERIFY2(name.find("to_gate_compress") != std::string::npos || name.find("proj_l") != std::string::npos,
               name.c_str());
      QVERIFY2(p.abs().sum().item<double>() > 0, name.c_str());  // trained in the student
    }
    QVERIFY(!p.requires_grad());
  }
  const at::Tensor student_out = model->forward(x, t, ctx, full);
  QVERIFY(rel_err(student_out, teacher_before) > 1e-6);  // the student's adapters did train
  train::detach_lora(*model);
  QVERIFY(model->forward(x, t, ctx, full).equal(teacher_before));  // the teacher, bit for bit
}

// A model trained with VSA (the demo model) is distilled with a vsa teacher and critic: every
// teacher and critic call runs vsa, the gates they read stay the trained
// model's (bit for bit), and an sla_star student trains only the extra the teacher does not read.
void tst_distill::sparseTeacherKeepsItsExtras() {
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  train::add_sparse_extras(*model, /*gate_compress=*/true, /*proj_l=*/false);
  std::map<std::string, at::Tensor> gates;
  {
    c10::NoGradGuard no_grad;
    for (auto& [name, p] : wan::wan_named_parameters(*model)) {
      if (name.find("to_gate_compress") == std::string::npos) continue;
      p.copy_(randn_seeded(p.sizes().vec(), 9) * 0.1);  // trained gates, not fresh zeros
      gates[name] = p.detach().clone();
    }
  }
  QVERIFY(!gates.empty());
  wan::WanLinearImpl* q = nullptr;
  for (auto& [name, linear] : train::wan_named_linears(*model)) {
    if (name == "blocks.0.self_attn.q") q = linear;
  }
  WatchingBackend watching(*backend(), q);
  train::DistillOptions o = base_options("sla_star");
  o.steps = 2;
  o.teacher_method = "vsa";
  o.teacher_sparsity = 0.5;
  const train::DistillResult r = train::distill(*model, &watching, make_prompts(3), o);
  QCOMPARE(r.frozen_extras.size(), gates.size());
  for (const auto& [name, gate] : gates) QVERIFY2(r.frozen_extras.count(name), name.c_str());
  int teacher_or_critic = 0;
  for (const auto& c : watching.calls) {
    QVERIFY2(c.method == "vsa" || c.method == "sla_star", c.method.c_str());
    teacher_or_critic += c.method == "vsa";
  }
  QVERIFY(teacher_or_critic > 0);
  bool proj_l_trained = false;
  for (auto& [name, p] : wan::wan_named_parameters(*model)) {
    if (gates.count(name)) QVERIFY2(p.equal(gates[name]), name.c_str());
    if (name.find("proj_l") != std::string::npos) proj_l_trained |= p.abs().sum().item<double>() > 0;
  }
  QVERIFY(proj_l_trained);
}

// Off by default (reported 0); at weight w the generator loss of step 1 is the same DMD loss plus
// w times the regression loss to the teacher's guided sample.
void tst_distill::regressionLossIsOptional() {
  auto run = [&](double weight) {
    train::DistillOptions o = base_options("vsa");
    o.steps = 1;
    o.critic_updates = 1;
    o.regression_weight = weight;
    o.regression_steps = 3;
    std::vector<train::DistillStep> steps;
    o.on_step = [&](const train::DistillStep& s) { steps.push_back(s); };
    wan::WanModel model = wan::wan_make_model(small_config(), 2);
    train::distill(*model, backend(), make_prompts(2, true), o);
    return steps.at(0);
  };
  const train::DistillStep off = run(0.0), on = run(0.5);
  QCOMPARE(off.regression_loss, 0.0);
  QVERIFY(on.regression_loss > 1e-3);
  QCOMPARE(on.dmd_grad_norm, off.dmd_grad_norm);
  QVERIFY2(close(on.generator_loss, off.generator_loss + 0.5 * on.regression_loss, 1e-5),
           qPrintable(QString("%1 != %2 + 0.5 * %3").arg(on.generator_loss).arg(off.generator_loss)
                          .arg(on.regression_loss)));
}

// An I2V-A14B expert distils with its prompts' image conditioning in every role's calls: the losses
// are finite, and another conditioning gives another first step.
void tst_distill::imageConditionedExpertDistils() {
  auto first_step = [&](uint64_t seed) -> train::DistillStep {
    train::DistillOptions o = base_options("vsa");
    o.steps = 2;
    std::vector<train::DistillStep> steps;
    o.on_step = [&](const train::DistillStep& s) { steps.push_back(s); };
    wan::WanModel model = wan::wan_make_model(conditioned_config(), 2);
    train::distill(*model, backend(), conditioned_prompts(seed), o);
    for (const auto& s : steps) {
      if (!std::isfinite(s.generator_loss) || !std::isfinite(s.critic_loss)) return train::DistillStep{};
    }
    return steps.at(0);
  };
  const train::DistillStep a = first_step(11), b = first_step(12);
  QVERIFY2(a.step == 1 && b.step == 1, "a loss was not finite");
  QVERIFY2(a.generator_loss != b.generator_loss && a.critic_loss != b.critic_loss,
           "the conditioning did not reach the model");
}

void tst_distill::resumeIsBitIdentical() {
  const auto prompts = make_prompts(3, /*with_image=*/true);
  auto options = [&](const std::string& dir) {
    train::DistillOptions o = base_options("vsa");
    o.steps = 4;
    o.checkpointing = true;
    o.checkpoint_dir = dir;
    return o;
  };
  wan::WanModel straight = wan::wan_make_model(small_config(), 6);
  const train::DistillResult a = train::distill(*straight, backend(), prompts, options(temp_dir("d-a")));
  QCOMPARE(a.generator_losses.size(), size_t{4});

  const std::string dir_b = temp_dir("d-b");
  wan::WanModel first = wan::wan_make_model(small_config(), 6);
  train::DistillOptions o = options(dir_b);
  o.save_every = 1;
  int calls = 0;
  o.on_step = [&](const train::DistillStep&) { ++calls; };
  o.is_cancelled = [&] { return calls == 3; };
  const train::DistillResult b = train::distill(*first, backend(), prompts, o);
  QVERIFY(b.cancelled);
  QCOMPARE(b.steps_done, 3);
  QCOMPARE(QString::fromStdString(b.checkpoint_path), QString::fromStdString(dir_b + "/distill-step-000003.safetensors"));
  for (const std::string& from : {dir_b + "/distill-step-000002.safetensors", b.checkpoint_path}) {
    wan::WanModel resumed = wan::wan_make_model(small_config(), 6);
    train::DistillOptions ro = options(temp_dir("d-c"));
    ro.resume_from = from;
    const train::DistillResult c = train::distill(*resumed, backend(), prompts, ro);
    QCOMPARE(c.steps_done, 4);
    QCOMPARE(c.generator_losses, a.generator_losses);  // bit for bit, with the restored history
    QCOMPARE(c.critic_losses, a.critic_losses);
    QCOMPARE(c.dmd_grad_norms, a.dmd_grad_norms);
    const auto x = student_tensors(*straight), y = student_tensors(*resumed);
    QCOMPARE(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) QVERIFY2(x[i].equal(y[i]), qPrintable(QString("tensor %1").arg(i)));
  }
  // Another seed distils differently (the checks above can fail).
  wan::WanModel other = wan::wan_make_model(small_config(), 6);
  train::DistillOptions so = options(temp_dir("d-d"));
  so.seed = 6;
  QVERIFY(train::distill(*other, backend(), prompts, so).generator_losses != a.generator_losses);
}

void tst_distill::cancelWritesResumableCheckpoint() {
  const auto prompts = make_prompts(2);
  train::DistillOptions o = base_options("sla_star");
  o.steps = 2;
  o.checkpoint_dir = temp_dir("d-cancel");
  o.is_cancelled = [] { return true; };  // before the first step
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  const train::DistillResult r = train::distill(*model, backend(), prompts, o);
  QVERIFY(r.cancelled);
  QCOMPARE(r.steps_done, 0);
  QVERIFY(r.generator_losses.empty());
  const auto file = model_io::SafetensorsFile::open(r.checkpoint_path);
  QCOMPARE(file.metadata().count("vidgraph_distill_state"), size_t{1});
  QVERIFY(file.contains("trained.student.blocks.0.self_attn.q.lora_down"));
  QVERIFY(file.contains("trained.student.blocks.1.self_attn.proj_l.weight"));
  QVERIFY(file.contains("trained.critic.blocks.1.self_attn.o.lora_up"));
  QVERIFY(!file.contains("trained.critic.blocks.1.self_attn.proj_l.weight"));  // extras: the student's only
  o.is_cancelled = nullptr;
  o.resume_from = r.checkpoint_path;
  o.checkpoint_dir = temp_dir("d-cancel-2");
  wan::WanModel again = wan::wan_make_model(small_config(), 4);
  QCOMPARE(train::distill(*again, backend(), prompts, o).steps_done, 2);
  o.critic_lora.rank = 3;
  wan::WanModel third = wan::wan_make_model(small_config(), 4);
  try {
    train::distill(*third, backend(), prompts, o);
    QFAIL("a checkpoint of another critic rank was accepted");
  } catch (const std::runtime_error& e) {
    QVERIFY2(QString(e.what()).contains("critic_lora"), e.what());
  }
}

void tst_distill::badInputsAreRejected_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QString>("message");
  QTest::newRow("no prompts") << 0 << "the prompt list is empty";
  QTest::newRow("critic rank 0") << 1 << "The critic's LoRA rank must be at least 1, got 0";
  QTest::newRow("student rank 0") << 2 << "The student's LoRA rank must be at least 1";
  QTest::newRow("unknown method") << 3 << "has no method 'vsb'";
  QTest::newRow("method refused") << 4 << "The student with attention method 'vsa' cannot run";
  QTest::newRow("no plugin") << 5 << "The student method 'sla_star' needs the attention plugin";
  QTest::newRow("full student copy") << 6 << "A full copy of the student is not supported yet";
  QTest::newRow("full critic copy") << 7 << "A full copy of the critic is not supported yet";
  QTest::newRow("LoRA'd teacher") << 8 << "The teacher already carries a LoRA adapter";
  QTest::newRow("no negative") << 9 << "The teacher's guidance needs the negative prompt's text context";
  QTest::newRow("critic updates") << 10 << "at least 1 update per student update";
  QTest::newRow("schedule") << 11 << "strictly decrease";
  QTest::newRow("channels") << 12 << "channels; the model takes 4";
  QTest::newRow("i2v 1 frame") << 13 << "has 1 frame";
  QTest::newRow("prompt context") << 14 << "Prompt 1 ('prompt 1') needs a text context";
  QTest::newRow("guidance") << 15 << "guidance must be 1 (none) or more";
  QTest::newRow("resume") << 16 << "does not exist";
  QTest::newRow("step off the expert's side") << 17 << "timestep 1000 is outside the expert's noise levels (below 875)";
  QTest::newRow("low-noise expert without clips") << 18 << "Prompt 0 ('prompt 0') has no clip";
  QTest::newRow("clip of another shape") << 19 << "not of the student's latent shape";
  QTest::newRow("expert with regression") << 20 << "set regression_weight 0 to distil an expert";
  QTest::newRow("re-noising off the side") << 21 << "does not overlap the expert's noise levels";
  QTest::newRow("I2V-A14B prompt without conditioning") << 22 << "Prompt 0 ('prompt 0') has no image conditioning";
  QTest::newRow("conditioning for a T2V model") << 23 << "carries image conditioning, which this model does not take";
  QTest::newRow("conditioning of another shape") << 24 << "image conditioning is not [8, 4, 8, 8]";
}

void tst_distill::badInputsAreRejected() {
  QFETCH(int, which);
  QFETCH(QString, message);
  auto prompts = make_prompts(2);
  train::DistillOptions o = base_options("vsa");
  plugin::AttentionBackend* b = backend();
  wan::WanModel model = wan::wan_make_model(small_config(), 4);
  switch (which) {
    case 0: prompts.clear(); break;
    case 1: o.critic_lora.rank = 0; break;
    case 2: o.student_lora.rank = 0; break;
    case 3: o.method = "vsb"; break;
    case 4: o.sparsity.target = 1.5; break;
    case 5: o.method = "sla_star"; b = nullptr; break;
    case 6: o.student_mode = train::TrainMode::Full; break;
    case 7: o.critic_mode = train::TrainMode::Full; break;
    case 8: {
      train::LoraOptions lo;
      lo.rank = 2;
      train::attach_lora(*model, lo, 1);
      break;
    }
    case 9: o.negative_context = at::Tensor(); break;
    case 10: o.critic_updates = 0; break;
    case 11: o.student_timesteps = {1000, 522, 757}; break;
    case 12: o.latent_shape = {8, 4, 8, 8}; break;
    case 13:
      o.latent_shape = {4, 1, 8, 8};
      prompts[1].first_frame = make_sample(1, 1).latent;
      break;
    case 14: prompts[1].context = prompts[1].context.narrow(1, 0, 8); break;
    case 15: o.guidance = 0.5; break;
    case 16: o.resume_from = "/nonexistent/distill-step-000001.safetensors"; break;
    case 17: o.sigma_max = 0.875; break;
    case 18: o.sigma_max = 0.875; o.student_timesteps = {800, 400}; break;
    case 19:
      o.sigma_max = 0.875;
      o.student_timesteps = {800, 400};
      for (auto& p : prompts) p.clip = make_sample(1, 2).latent;
      break;
    case 20: o.sigma_min = 0.875; o.student_timesteps = {1000, 900}; o.regression_weight = 1; break;
    case 21: o.sigma_min = 0.999; o.student_timesteps = {1000}; break;
    case 22: model = wan::wan_make_model(conditioned_config(), 4); break;
    case 23: prompts = conditioned_prompts(7); break;
    case 24:
      model = wan::wan_make_model(conditioned_config(), 4);
      prompts = conditioned_prompts(7);
      prompts[1].condition = prompts[1].condition.narrow(1, 0, 2);
      break;
  }
  const size_t parameters = wan::wan_named_parameters(*model).size();
  const size_t adapters = train::attached_lora_modules(*model).size();
  int steps = 0;
  o.on_step = [&](const train::DistillStep&) { ++steps; };
  try {
    train::distill(*model, b, prompts, o);
    QFAIL("bad inputs were accepted");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(QString(e.what()).contains(message), e.what());
  }
  QCOMPARE(steps, 0);
  QCOMPARE(wan::wan_named_parameters(*model).size(), parameters);  // no extras were added
  QCOMPARE(train::attached_lora_modules(*model).size(), adapters);
}

QTEST_GUILESS_MAIN(tst_distill)
#include "tst_distill.moc"
