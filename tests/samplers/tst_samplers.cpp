// Flow samplers: the official UniPC schedule, Euler and UniPC against hand-computed steps,
// exactness on straight-line flows, CFG, i2v clean first frame + per-frame timesteps, seeded noise,
// initial latents, progress and cancellation, DMD few-step against hand-computed steps, the per-step
// clean-latent estimate for previews, the Wan DiT adapter end to end, and Wan2.2-I2V-A14B's
// conditioning (mask layout, channel order, the DiT fed [36, ...]).
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/ops/full_like.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <limits>
#include <vector>

#include "models/sampling/dmd_solver.h"
#include "models/sampling/flow_sampler.h"
#include "models/sampling/flow_schedule.h"
#include "models/sampling/flow_solver.h"
#include "models/sampling/i2v_condition.h"
#include "models/sampling/wan_velocity.h"
#include "models/wan/wan_tiny.h"

#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::sampling;

namespace {

at::Tensor scalar(double v) {
  return at::full({1}, v, at::TensorOptions().dtype(at::kDouble));
}

double lam(double s) {
  return std::log(1.0 - s) - std::log(s);
}

// A nonlinear toy velocity: v(x, s) = 0.7 x - 0.2 + 0.3 s.
double toy_v(double x, double s) {
  return 0.7 * x - 0.2 + 0.3 * s;
}

}  // namespace

class tst_samplers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { c10::GradMode::set_enabled(false); }
  void officialSchedule();
  void scheduleErrors_data();
  void scheduleErrors();
  void eulerHandComputed();
  void unipcHandComputed();
  void straightLineExact_data();
  void straightLineExact();
  void stepPastEnd();
  void cfgCombination();
  void twoExperts_data();
  void twoExperts();
  void imageToVideo();
  void denoisedEstimate();
  void seededNoise();
  void dmdHandComputed();
  void dmdImageToVideo();
  void dmdScheduleErrors();
  void initialLatent();
  void progressAndCancel();
  void badOptions();
  void wanEndToEnd();
  void i2vMaskLayout_data();
  void i2vMaskLayout();
  void i2vConditionChannelOrder();
  void wanVelocityConcatenatesCondition();
  void noiseSameOnGpu();
};

void tst_samplers::officialSchedule() {
  const FlowSchedule s = flow_unipc_schedule(50, 5.0);
  QCOMPARE(s.steps(), 50);
  QCOMPARE(s.sigmas.size(), size_t(51));
  const std::vector<double> head{999, 995, 991, 987, 982};
  const std::vector<double> tail{302, 241, 172, 92};
  for (size_t i = 0; i < head.size(); ++i) QCOMPARE(s.timesteps[i], head[i]);
  for (size_t i = 0; i < tail.size(); ++i) QCOMPARE(s.timesteps[46 + i], tail[i]);
  QVERIFY(std::abs(s.sigmas[0] - 0.9998) < 1e-4);
  QCOMPARE(s.sigmas.back(), 0.0);
  for (int i = 0; i < 50; ++i) QVERIFY(s.sigmas[i + 1] < s.sigmas[i]);
  // Shift 1 leaves the linear schedule.
  const FlowSchedule e = flow_euler_schedule(4, 1.0);
  const std::vector<double> lin{1.0, 0.75, 0.5, 0.25, 0.0};
  for (int i = 0; i < 5; ++i) QVERIFY(std::abs(e.sigmas[i] - lin[i]) < 1e-12);
  QCOMPARE(e.timesteps[1], 750.0);
}

void tst_samplers::scheduleErrors_data() {
  QTest::addColumn<int>("which");
  QTest::newRow("zero steps") << 0;
  QTest::newRow("negative shift") << 1;
  QTest::newRow("sigmas not ending in 0") << 2;
  QTest::newRow("sigmas increasing") << 3;
}

void tst_samplers::scheduleErrors() {
  QFETCH(int, which);
  bool threw = false;
  try {
    if (which == 0) flow_unipc_schedule(0, 5.0);
    if (which == 1) flow_euler_schedule(4, -1.0);
    if (which == 2) flow_schedule_from_sigmas({1.0, 0.5});
    if (which == 3) flow_schedule_from_sigmas({0.5, 0.8, 0.0});
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  QVERIFY(threw);
}

void tst_samplers::eulerHandComputed() {
  const std::vector<double> sig{1.0, 0.6, 0.25, 0.0};
  FlowEulerSolver solver(flow_schedule_from_sigmas(sig));
  double xe = 1.5;
  at::Tensor x = scalar(xe);
  for (int i = 0; i < 3; ++i) {
    x = solver.step(scalar(toy_v(x.item<double>(), sig[i])), x);
    xe = xe + (sig[i + 1] - sig[i]) * toy_v(xe, sig[i]);
    QVERIFY(std::abs(x.item<double>() - xe) < 1e-12);
  }
  // 1.5 -> 1.5 - 0.4*(1.05 - 0.2 + 0.3) = 1.04 (first step by hand)
  FlowEulerSolver again(flow_schedule_from_sigmas(sig));
  QVERIFY(std::abs(again.step(scalar(toy_v(1.5, 1.0)), scalar(1.5)).item<double>() - 1.04) < 1e-12);
}

void tst_samplers::unipcHandComputed() {
  // Four steps written out from the UniPC-bh2 formulas (predict x0, B(h) = expm1(-h)).
  const std::vector<double> s{0.9, 0.6, 0.3, 0.1, 0.0};
  FlowUniPCSolver solver(flow_schedule_from_sigmas(s));
  auto a = [&](int i) { return 1.0 - s[i]; };
  auto check = [](const at::Tensor& x, double want) {
    QVERIFY2(std::abs(x.item<double>() - want) < 1e-12, qPrintable(QString::number(x.item<double>() - want)));
  };
  const double x0 = 0.8;
  at::Tensor x = scalar(x0);

  // Step 0: order-1 predictor.
  const double m0 = x0 - s[0] * toy_v(x0, s[0]);
  double h = lam(s[1]) - lam(s[0]);
  const double x1 = s[1] / s[0] * x0 - a(1) * std::expm1(-h) * m0;
  x = solver.step(scalar(toy_v(x0, s[0])), x);
  check(x, x1);

  // Step 1: order-1 corrector (rho = 0.5) on x1, then order-2 predictor (rho_p = 0.5).
  const double m1 = x1 - s[1] * toy_v(x1, s[1]);
  const double x1c = s[1] / s[0] * x0 - a(1) * std::expm1(-h) * m0 - a(1) * std::expm1(-h) * 0.5 * (m1 - m0);
  h = lam(s[2]) - lam(s[1]);
  double r = (lam(s[0]) - lam(s[1])) / h;
  const double x2 = s[2] / s[1] * x1c - a(2) * std::expm1(-h) * m1 - a(2) * std::expm1(-h) * 0.5 * (m0 - m1) / r;
  x = solver.step(scalar(toy_v(x1, s[1])), x);
  check(x, x2);

  // Step 2: order-2 corrector (solve [[1, 1], [r, 1]] rho = b, b_k = h_phi_k k! / B_h),
  // then an order-2 predictor from the corrected sample.
  const double m2 = x2 - s[2] * toy_v(x2, s[2]);
  const double hh = -h;
  const double phi1 = std::expm1(hh);
  const double b0 = (phi1 / hh - 1) / phi1;
  const double b1 = ((phi1 / hh - 1) / hh - 0.5) * 2 / phi1;
  const double rho0 = (b0 - b1) / (1 - r), rho1 = b0 - rho0;
  const double x2c = s[2] / s[1] * x1c - a(2) * phi1 * m1 - a(2) * phi1 * (rho0 * (m0 - m1) / r + rho1 * (m2 - m1));
  h = lam(s[3]) - lam(s[2]);
  r = (lam(s[1]) - lam(s[2])) / h;
  const double x3 = s[3] / s[2] * x2c - a(3) * std::expm1(-h) * m2 - a(3) * std::expm1(-h) * 0.5 * (m1 - m2) / r;
  x = solver.step(scalar(toy_v(x2, s[2])), x);
  check(x, x3);

  // Step 3 (last, sigma -> 0, order 1): returns the x0 prediction at x3.
  x = solver.step(scalar(toy_v(x3, s[3])), x);
  check(x, x3 - s[3] * toy_v(x3, s[3]));
  QCOMPARE(solver.step_index(), 4);
}

void tst_samplers::straightLineExact_data() {
  QTest::addColumn<int>("solver");
  QTest::newRow("unipc") << 0;
  QTest::newRow("euler") << 1;
  QTest::newRow("unipc from sigma 1") << 2;
}

void tst_samplers::straightLineExact() {
  // If the model returns the true velocity of x_s = (1 - s) x0 + s n, both solvers stay on it.
  QFETCH(int, solver);
  at::Tensor x0 = at::tensor({0.3, -1.2, 2.0}, at::kDouble);
  at::Tensor n = at::tensor({1.1, 0.4, -0.7}, at::kDouble);
  const FlowSchedule sched = solver == 0 ? flow_unipc_schedule(12, 5.0) : flow_euler_schedule(12, 3.0);
  std::unique_ptr<FlowSolver> s;
  if (solver != 1)
    s = std::make_unique<FlowUniPCSolver>(sched);
  else
    s = std::make_unique<FlowEulerSolver>(sched);
  at::Tensor x = x0 * (1 - sched.sigmas[0]) + n * sched.sigmas[0];
  for (int i = 0; i < sched.steps(); ++i) {
    x = s->step(n - x0, x);
    const double si = sched.sigmas[i + 1];
    QVERIFY(at::allclose(x, x0 * (1 - si) + n * si, 1e-9, 1e-9));
  }
  QVERIFY(at::allclose(x, x0, 1e-12, 1e-12));
}

void tst_samplers::stepPastEnd() {
  FlowEulerSolver s(flow_euler_schedule(1, 1.0));
  s.step(scalar(1.0), scalar(1.0));
  bool threw = false;
  try {
    s.step(scalar(1.0), scalar(1.0));
  } catch (const std::logic_error&) {
    threw = true;
  }
  QVERIFY(threw);
}

void tst_samplers::cfgCombination() {
  // One Euler step from sigma 1 to 0: x1 = x - v with v = vu + g (vc - vu).
  FlowSampleOptions o;
  o.solver = SolverKind::Euler;
  o.sigmas = {1.0, 0.0};
  o.guide_scale = 4.0;
  o.initial_latent = at::full({1, 1, 1, 2}, 1.0f);
  int calls = 0;
  bool branches_ok = true;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor&, bool need_uncond) -> std::vector<at::Tensor> {
    ++calls;
    branches_ok = branches_ok && need_uncond;
    return {at::full_like(x, 0.5), at::full_like(x, 0.25)};
  };
  at::Tensor out = flow_sample(fn, o);
  QCOMPARE(calls, 1);
  QVERIFY(branches_ok);
  QVERIFY(at::allclose(out, at::full({1, 1, 1, 2}, 1.0f - (0.25f + 4.0f * 0.25f))));
  // Guidance 1: one branch only.
  o.guide_scale = 1.0;
  VelocityFn single = [&](const at::Tensor& x, const at::Tensor&, bool need_uncond) -> std::vector<at::Tensor> {
    branches_ok = branches_ok && !need_uncond;
    return {at::full_like(x, 0.5)};
  };
  QVERIFY(at::allclose(flow_sample(single, o), at::full({1, 1, 1, 2}, 0.5f)));
  QVERIFY(branches_ok);
}

void tst_samplers::twoExperts_data() {
  QTest::addColumn<double>("boundary");
  QTest::addColumn<QString>("experts");  // per step: h = high-noise, l = low-noise
  // Steps at t = 1000, 900, 875, 500: t >= boundary runs the high-noise expert (a step exactly at
  // the boundary included), as wan/text2video.py (T2V 0.875) and image2video.py (I2V 0.900) do.
  QTest::newRow("t2v boundary 875") << 875.0 << "hhhl";
  QTest::newRow("i2v boundary 900") << 900.0 << "hhll";
}

// Wan2.2-A14B: each step calls the expert its timestep picks, with that expert's guidance.
void tst_samplers::twoExperts() {
  QFETCH(double, boundary);
  QFETCH(QString, experts);
  FlowSampleOptions o;
  o.solver = SolverKind::Euler;
  o.sigmas = {1.0, 0.9, 0.875, 0.5, 0.0};
  o.initial_latent = at::zeros({1, 1, 1, 2});
  o.guide_scale = 4.0;  // high-noise expert
  QString called;
  std::vector<double> timesteps;
  // cond 1, uncond 0: the guided velocity is the expert's guidance itself.
  auto expert = [&](char name) {
    return [&, name](const at::Tensor& x, const at::Tensor& t, bool need_uncond) -> std::vector<at::Tensor> {
      called += QLatin1Char(name);
      timesteps.push_back(t[0].item<double>());
      if (!need_uncond) return {at::full_like(x, 1.0)};
      return {at::full_like(x, 1.0), at::zeros_like(x)};
    };
  };
  o.low_noise.model = expert('l');
  o.low_noise.boundary = boundary;
  o.low_noise.guide_scale = 1.0;  // the low-noise expert unguided: one branch
  const at::Tensor out = flow_sample(expert('h'), o);
  QCOMPARE(called, experts);
  QCOMPARE(timesteps, (std::vector<double>{1000.0, 900.0, 875.0, 500.0}));
  // Euler from 0: x = sum of (sigma_{i+1} - sigma_i) * guidance of step i's expert.
  double want = 0;
  for (int i = 0; i < 4; ++i) want += (o.sigmas[i + 1] - o.sigmas[i]) * (experts[i] == QLatin1Char('h') ? 4.0 : 1.0);
  QVERIFY2(std::abs(out[0][0][0][0].item<double>() - want) < 1e-6, qPrintable(QString::number(want)));
  // Without a second expert every step runs the first.
  FlowSampleOptions one = o;
  one.low_noise = {};
  called.clear();
  (void)flow_sample(expert('h'), one);
  QCOMPARE(called, QString("hhhh"));
  // A boundary outside the timesteps' range is refused before any step.
  o.low_noise.boundary = 0.0;
  called.clear();
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, flow_sample(expert('h'), o));
  QVERIFY(called.isEmpty());
}

void tst_samplers::imageToVideo() {
  FlowSampleOptions o;
  o.steps = 4;
  o.guide_scale = 1.0;
  o.latent_shape = {2, 3, 2, 2};
  o.seed = 5;
  at::Tensor z = at::full({2, 1, 2, 2}, 0.75f);
  o.first_frame = z;
  const FlowSchedule sched = schedule_for(o);
  std::vector<at::Tensor> seen_t;
  bool clean_before_every_call = true;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor& t, bool) -> std::vector<at::Tensor> {
    clean_before_every_call = clean_before_every_call && at::equal(x.narrow(1, 0, 1), z);
    seen_t.push_back(t.clone());
    return {x * 0.3 - 0.1};
  };
  at::Tensor out = flow_sample(fn, o);
  QVERIFY(clean_before_every_call);
  QVERIFY(at::equal(out.narrow(1, 0, 1), z));
  QCOMPARE(int(seen_t.size()), 4);
  for (int i = 0; i < 4; ++i) {
    QCOMPARE(seen_t[i].size(0), int64_t(3));
    QCOMPARE(seen_t[i][0].item<float>(), 0.0f);
    QCOMPARE(seen_t[i][1].item<double>(), sched.timesteps[i]);
    QCOMPARE(seen_t[i][2].item<double>(), sched.timesteps[i]);
  }
  // Without the image: t2v, every frame at t and frame 0 is generated.
  o.first_frame = at::Tensor();
  seen_t.clear();
  VelocityFn t2v = [&](const at::Tensor& x, const at::Tensor& t, bool) -> std::vector<at::Tensor> {
    seen_t.push_back(t.clone());
    return {x * 0.3 - 0.1};
  };
  at::Tensor free = flow_sample(t2v, o);
  QCOMPARE(seen_t[0][0].item<double>(), sched.timesteps[0]);
  QVERIFY(!at::equal(free.narrow(1, 0, 1), z));
}

// on_denoised gets x0 = x - sigma_i * v(x) of every step's model call, before on_step, with the
// clean first frame for image-to-video; CFG's combined velocity is the one used.
void tst_samplers::denoisedEstimate() {
  FlowSampleOptions o;
  o.solver = SolverKind::Euler;
  o.steps = 3;
  o.guide_scale = 2.0;
  o.latent_shape = {2, 3, 2, 2};
  o.seed = 7;
  const at::Tensor z = at::full({2, 1, 2, 2}, 0.5f);
  o.first_frame = z;
  const FlowSchedule sched = schedule_for(o);
  std::vector<at::Tensor> inputs;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    inputs.push_back(x.clone());
    return {x * 0.3 - 0.1, x * 0.1};  // guided: 0.1x + 2 (0.2x - 0.1) = 0.5x - 0.2
  };
  std::vector<at::Tensor> estimates;
  std::vector<int> order;  // +step from on_denoised, -step from on_step
  o.on_denoised = [&](int done, int total, const at::Tensor& x0) {
    QCOMPARE(total, 3);
    order.push_back(done);
    estimates.push_back(x0.clone());
  };
  o.on_step = [&](int done, int) { order.push_back(-done); };
  flow_sample(fn, o);
  QCOMPARE(order, (std::vector<int>{1, -1, 2, -2, 3, -3}));
  QCOMPARE(int(estimates.size()), 3);
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = inputs[i];
    at::Tensor want = x - (x * 0.5 - 0.2) * sched.sigmas[i];
    want.narrow(1, 0, 1).copy_(z);
    QVERIFY2(at::allclose(estimates[i], want, 1e-6, 1e-6), qPrintable(QString("step %1").arg(i + 1)));
  }
}

void tst_samplers::seededNoise() {
  at::Tensor a = seeded_noise({2, 3, 4}, 42, c10::Device(c10::kCPU));
  at::Tensor b = seeded_noise({2, 3, 4}, 42, c10::Device(c10::kCPU));
  at::Tensor c = seeded_noise({2, 3, 4}, 43, c10::Device(c10::kCPU));
  QVERIFY(at::equal(a, b));
  QVERIFY(!at::equal(a, c));
  QCOMPARE(a.scalar_type(), at::kFloat);
  // The draw is the CPU generator's, whatever the target device.
  at::Generator g = at::detail::createCPUGenerator(42);
  QVERIFY(at::equal(a, at::randn({2, 3, 4}, g)));
  // A whole run: same seed -> same latents; another seed -> other latents.
  FlowSampleOptions o;
  o.steps = 3;
  o.latent_shape = {1, 2, 2, 2};
  o.seed = 9;
  VelocityFn fn = [](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    return {x * 0.5, x * 0.4};
  };
  at::Tensor r1 = flow_sample(fn, o), r2 = flow_sample(fn, o);
  o.seed = 10;
  at::Tensor r3 = flow_sample(fn, o);
  QVERIFY(at::equal(r1, r2));
  QVERIFY(!at::equal(r1, r3));
}

void tst_samplers::initialLatent() {
  FlowSampleOptions o;
  o.steps = 2;
  o.guide_scale = 1.0;
  o.initial_latent = at::full({1, 2, 2, 2}, 0.125f);
  bool first = true;
  bool started_from_it = false;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    if (first) started_from_it = at::equal(x, o.initial_latent);
    first = false;
    return {x * 0.1};
  };
  flow_sample(fn, o);
  QVERIFY(!first);
  QVERIFY(started_from_it);
  QCOMPARE(o.initial_latent[0][0][0][0].item<float>(), 0.125f);  // the caller's tensor is untouched
}

void tst_samplers::progressAndCancel() {
  FlowSampleOptions o;
  o.steps = 5;
  o.latent_shape = {1, 1, 2, 2};
  int calls = 0;
  std::vector<std::pair<int, int>> progress;
  o.on_step = [&](int done, int total) { progress.emplace_back(done, total); };
  o.is_cancelled = [&] { return progress.size() >= 2; };
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    ++calls;
    return {x, x};
  };
  int cancelled_at = -1;
  try {
    flow_sample(fn, o);
  } catch (const SamplingCancelled& e) {
    cancelled_at = e.step();
  }
  QCOMPARE(cancelled_at, 2);
  QCOMPARE(calls, 2);
  QCOMPARE(progress.size(), size_t(2));
  QCOMPARE(progress[0], std::make_pair(1, 5));
  QCOMPARE(progress[1], std::make_pair(2, 5));
}

void tst_samplers::badOptions() {
  VelocityFn fn = [](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> { return {x, x}; };
  FlowSampleOptions o;
  o.latent_shape = {1, 2, 3};
  bool threw = false;
  try {
    flow_sample(fn, o);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  QVERIFY(threw);
  o.latent_shape = {4, 3, 2, 2};
  o.first_frame = at::zeros({4, 1, 2, 3});
  threw = false;
  try {
    flow_sample(fn, o);
  } catch (const std::invalid_argument& e) {
    threw = std::string(e.what()).find("first-frame") != std::string::npos;
  }
  QVERIFY(threw);
  o.first_frame = at::Tensor();
  VelocityFn wrong = [](const at::Tensor&, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    return {at::zeros({1}), at::zeros({1})};
  };
  threw = false;
  try {
    flow_sample(wrong, o);
  } catch (const std::invalid_argument& e) {
    threw = std::string(e.what()).find("velocity has shape") != std::string::npos;
  }
  QVERIFY(threw);
  VelocityFn overflow = [](const at::Tensor& x, const at::Tensor&, bool) -> std::vector<at::Tensor> {
    return {at::full_like(x, std::numeric_limits<float>::infinity()), at::zeros_like(x)};
  };
  std::string message;
  try {
    flow_sample(overflow, o);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  QVERIFY2(message.find("non-finite values at step 1 of 50") != std::string::npos, message.c_str());
}

void tst_samplers::wanEndToEnd() {
  wan::WanConfig c = wan::wan_tiny_config();
  c.in_dim = c.out_dim = 4;
  c.text_dim = 16;
  c.text_len = 8;
  wan::WanModel model = wan::wan_make_model(c, 31);
  at::Generator g = at::detail::createCPUGenerator(1);
  WanVelocityOptions vo;
  vo.context = at::randn({5, 16}, g);
  vo.context_null = at::randn({3, 16}, g);
  FlowSampleOptions o;
  o.steps = 3;
  o.latent_shape = {4, 3, 4, 4};
  o.seed = 77;
  o.first_frame = at::randn({4, 1, 4, 4}, g);
  at::Tensor batched = flow_sample(make_wan_velocity(model, vo), o);
  vo.batch_cfg = false;
  at::Tensor split = flow_sample(make_wan_velocity(model, vo), o);
  QCOMPARE(batched.sizes().vec(), (std::vector<int64_t>{4, 3, 4, 4}));
  QVERIFY(batched.isfinite().all().item<bool>());
  QVERIFY(at::allclose(batched, split, 1e-4, 1e-5));
  QVERIFY(at::equal(batched.narrow(1, 0, 1), o.first_frame));
  QVERIFY(at::equal(flow_sample(make_wan_velocity(model, vo), o), split));  // deterministic
}

void tst_samplers::i2vMaskLayout_data() {
  QTest::addColumn<int>("frames");
  QTest::addColumn<int>("latent_frames");
  QTest::newRow("1 frame") << 1 << 1;
  QTest::newRow("9 frames") << 9 << 3;
  QTest::newRow("81 frames") << 81 << 21;
}

// The mask against an element-by-element construction of wan/image2video.py's layout: channel c
// of latent frame t holds pixel frame 4t + c - 3 (frame 0 for every channel of t = 0), 1 for frame 0.
void tst_samplers::i2vMaskLayout() {
  QFETCH(int, frames);
  QFETCH(int, latent_frames);
  const int64_t h = 2, w = 3;
  const at::Tensor mask = i2v_mask(frames, h, w);
  QCOMPARE(mask.sizes().vec(), (std::vector<int64_t>{4, latent_frames, h, w}));
  QCOMPARE(mask.scalar_type(), at::kFloat);
  at::Tensor expected = at::zeros({4, latent_frames, h, w});
  for (int64_t t = 0; t < latent_frames; ++t) {
    for (int64_t c = 0; c < 4; ++c) {
      const int64_t frame = t == 0 ? 0 : 4 * t + c - 3;
      if (frame == 0) expected[c][t].fill_(1.0);
    }
  }
  QVERIFY(at::equal(mask, expected));
  QVERIFY(at::equal(mask.select(1, 0), at::ones({4, h, w})));
  QCOMPARE(mask.sum().item<double>(), double(4 * h * w));
  if (frames < 5) {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, i2v_mask(frames, h, w, true));
    return;
  }
  // With a last frame (first_last_frame2video.py): pixel frame F - 1 is given too, which is channel 3
  // of the last latent frame only.
  expected[3][latent_frames - 1].fill_(1.0);
  QVERIFY(at::equal(i2v_mask(frames, h, w, true), expected));
  QVERIFY(at::equal(i2v_condition(at::zeros({16, latent_frames, h, w}), true).narrow(0, 0, 4), expected));
}

// y = [mask (4), image latent (z)] in that order; frames not 4k + 1 are refused.
void tst_samplers::i2vConditionChannelOrder() {
  at::Generator g = at::detail::createCPUGenerator(5);
  const at::Tensor latent = at::randn({16, 3, 2, 3}, g);
  const at::Tensor y = i2v_condition(latent);
  QCOMPARE(y.sizes().vec(), (std::vector<int64_t>{20, 3, 2, 3}));
  QCOMPARE(i2v_condition_channels(16), int64_t(20));
  QVERIFY(at::equal(y.narrow(0, 0, 4), i2v_mask(9, 2, 3)));
  QVERIFY(at::equal(y.narrow(0, 4, 16), latent));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, i2v_mask(6, 2, 3));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, i2v_mask(9, 0, 3));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, i2v_condition(at::zeros({16, 3, 2})));
}

// A tiny I2V DiT (in_dim 36, out_dim 16): the velocity function feeds it cat([x, y]) [36, ...] and
// returns 16 channels, the same with both CFG branches batched or split (y for both); a full sample
// is finite and deterministic; a y of another size is refused.
void tst_samplers::wanVelocityConcatenatesCondition() {
  wan::WanConfig c = wan::wan_tiny_config();
  c.in_dim = 36;
  c.out_dim = 16;
  c.text_dim = 16;
  c.text_len = 8;
  wan::WanModel model = wan::wan_make_model(c, 41);
  at::Generator g = at::detail::createCPUGenerator(2);
  WanVelocityOptions vo;
  vo.context = at::randn({5, 16}, g);
  vo.context_null = at::randn({3, 16}, g);
  vo.condition = i2v_condition(at::randn({16, 3, 4, 4}, g));
  const at::Tensor x = at::randn({16, 3, 4, 4}, g);
  const at::Tensor t = at::full({3}, 500.0);
  const std::vector<at::Tensor> batched = make_wan_velocity(model, vo)(x, t, true);
  QCOMPARE(batched.at(0).sizes().vec(), (std::vector<int64_t>{16, 3, 4, 4}));
  WanVelocityOptions split_options = vo;
  split_options.batch_cfg = false;
  const std::vector<at::Tensor> split = make_wan_velocity(model, split_options)(x, t, true);
  QVERIFY(at::allclose(batched.at(0), split.at(0), 1e-4, 1e-5));
  QVERIFY(at::allclose(batched.at(1), split.at(1), 1e-4, 1e-5));
  // The direct call on [1, 36, ...] = cat([x, y]) gives the conditional velocity.
  const at::Tensor context = at::cat({vo.context, at::zeros({3, 16})}, 0).unsqueeze(0);
  const at::Tensor direct =
      model->forward(at::cat({x, vo.condition}, 0).unsqueeze(0), t.unsqueeze(0), context, wan::AttentionRun{});
  QVERIFY(at::allclose(split.at(0), direct.squeeze(0), 1e-5, 1e-6));
  FlowSampleOptions o;
  o.steps = 2;
  o.guide_scale = 3.5;
  o.latent_shape = {16, 3, 4, 4};
  o.seed = 9;
  const at::Tensor sampled = flow_sample(make_wan_velocity(model, vo), o);
  QVERIFY(sampled.isfinite().all().item<bool>());
  QVERIFY(at::equal(sampled, flow_sample(make_wan_velocity(model, vo), o)));
  WanVelocityOptions wrong = vo;
  wrong.condition = i2v_condition(at::randn({16, 2, 4, 4}, g));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_wan_velocity(model, wrong)(x, t, false));
}

void tst_samplers::noiseSameOnGpu() {
  if (!at::hasCUDA()) {
    QSKIP("No GPU: seeded noise on a GPU was not compared with the CPU draw.");
  }
  at::Tensor cpu = seeded_noise({3, 5, 7}, 1234, c10::Device(c10::kCPU));
  at::Tensor gpu = seeded_noise({3, 5, 7}, 1234, c10::Device(c10::kCUDA, 0));
  QCOMPARE(gpu.device().type(), c10::kCUDA);
  QVERIFY(at::equal(gpu.cpu(), cpu));
}


// DMD with a model whose velocity is a fixed tensor: every latent the model sees and the result
// follow x0 = x - sigma v, x_next = (1 - sigma_next) x0 + sigma_next noise, with the noise drawn
// after the initial noise from one generator seeded with the run's seed.
void tst_samplers::dmdHandComputed() {
  FlowSampleOptions o;
  o.solver = SolverKind::Dmd;
  o.guide_scale = 1.0;
  o.latent_shape = {2, 3, 2, 2};
  o.seed = 77;
  const at::Tensor v = at::randn({2, 3, 2, 2}, at::detail::createCPUGenerator(5));
  std::vector<at::Tensor> seen_x, seen_t;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor& t, bool need_uncond) -> std::vector<at::Tensor> {
    if (need_uncond) throw std::logic_error("DMD at guidance 1 must not ask for the unconditional branch");
    seen_x.push_back(x.clone());
    seen_t.push_back(t.clone());
    return {v};
  };
  const at::Tensor out = flow_sample(fn, o);
  at::Generator g = at::detail::createCPUGenerator(77);
  at::Tensor x = at::randn({2, 3, 2, 2}, g).to(at::kDouble);
  const at::Tensor vd = v.to(at::kDouble);
  const std::vector<double> t{1000, 757, 522};
  QCOMPARE(int(seen_x.size()), 3);
  for (int i = 0; i < 3; ++i) {
    QVERIFY2(at::allclose(seen_x[i].to(at::kDouble), x, 1e-5, 1e-6), qPrintable(QString("step %1").arg(i)));
    QVERIFY(at::equal(seen_t[i], at::full({3}, t[i], seen_t[i].options())));
    const at::Tensor x0 = x - vd * (t[i] / 1000.0);
    if (i == 2) {
      x = x0;
    } else {
      const double next = t[i + 1] / 1000.0;
      x = x0 * (1.0 - next) + at::randn({2, 3, 2, 2}, g).to(at::kDouble) * next;
    }
  }
  QVERIFY(at::allclose(out.to(at::kDouble), x, 1e-5, 1e-6));
  // The seed reproduces the run; another seed changes the re-noising (and the start).
  QVERIFY(at::equal(flow_sample(fn, o), out));
  o.seed = 78;
  QVERIFY(!at::allclose(flow_sample(fn, o), out));
  // A custom list: two steps from 800 -> sigma 0.8 then 0.4.
  o.seed = 77;
  o.dmd_timesteps = {800, 400};
  seen_t.clear();
  seen_x.clear();
  const at::Tensor two = flow_sample(fn, o);
  QCOMPARE(int(seen_t.size()), 2);
  QCOMPARE(seen_t[1][0].item<double>(), 400.0);
  QVERIFY(at::allclose(two, seen_x[1] - v * 0.4, 1e-5, 1e-6));
}

// Image-to-video under DMD: frame 0 is the clean latent before every call (re-imposed after the
// re-noising), its timestep 0, and the result keeps it.
void tst_samplers::dmdImageToVideo() {
  FlowSampleOptions o;
  o.solver = SolverKind::Dmd;
  o.guide_scale = 1.0;
  o.latent_shape = {2, 3, 2, 2};
  o.seed = 3;
  const at::Tensor z = at::full({2, 1, 2, 2}, -0.5f);
  o.first_frame = z;
  bool clean = true;
  std::vector<at::Tensor> seen_t;
  VelocityFn fn = [&](const at::Tensor& x, const at::Tensor& t, bool) -> std::vector<at::Tensor> {
    clean = clean && at::equal(x.narrow(1, 0, 1), z);
    seen_t.push_back(t.clone());
    return {x * 0.2 + 0.1};
  };
  const at::Tensor out = flow_sample(fn, o);
  QVERIFY(clean);
  QVERIFY(at::equal(out.narrow(1, 0, 1), z));
  QCOMPARE(int(seen_t.size()), 3);
  for (const at::Tensor& t : seen_t) QCOMPARE(t[0].item<float>(), 0.0f);
  QCOMPARE(seen_t[1][1].item<float>(), 757.0f);
}

void tst_samplers::dmdScheduleErrors() {
  const FlowSchedule s = dmd_schedule(kFastWan22DmdTimesteps);
  QCOMPARE(s.timesteps, (std::vector<double>{1000, 757, 522}));
  QCOMPARE(s.sigmas, (std::vector<double>{1.0, 0.757, 0.522, 0.0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dmd_schedule({}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dmd_schedule({500, 700}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dmd_schedule({1001, 500}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dmd_schedule({500, 0}));
}

QTEST_GUILESS_MAIN(tst_samplers)
#include "tst_samplers.moc"
