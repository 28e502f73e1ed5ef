// Wan DiT: config (5B counts, detection), RoPE against its closed formula, the forward pass against
// an independent float64 per-token reference, per-frame modulation == per-token, shape contract and
// errors, dtype plumbing (bf16 weights), self-attention through the real attention plugin, and the
// blocks' fused elementwise kernels (plugins/api/dit_kernels.h) against an ATen reference of them.
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/tensor.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>
#include <memory>

#include "models/wan/wan_block.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_memory.h"
#include "models/wan/wan_model.h"
#include "models/wan/wan_rope.h"
#include "models/wan/wan_tiny.h"
#include "plugins/api/plugin_loader.h"

#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::wan;

namespace {

at::Tensor randn_seeded(at::IntArrayRef shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(at::kFloat));
}

double rel_err(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  return (ad - bd).norm().item<double>() / std::max(bd.norm().item<double>(), 1e-30);
}

WanConfig small_config() {
  WanConfig c = wan_tiny_config();
  c.in_dim = 4;
  c.out_dim = 4;
  c.text_len = 8;
  c.text_dim = 16;
  return c;
}

// The DitKernels contract in plain ATen ops (fp32 maths, one rounding at the end), on any device:
// the reference of the fused GPU kernels, and what lets the CPU suite check the blocks' fused path.
class AtenDitKernels : public plugin::DitKernels {
 public:
  bool supports(c10::Device, at::ScalarType) const override { return supported; }
  at::Tensor layer_norm_modulate(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps,
                                 const at::Tensor& shift, const at::Tensor& scale, at::ScalarType dtype) override {
    ++calls;
    at::Tensor y = at::layer_norm(x, {x.size(2)}, weight, bias, eps);
    if (shift.defined()) y = modulate_groups(y, shift, scale);
    return y.to(dtype);
  }
  at::Tensor rms_norm_rope(const at::Tensor& y, const at::Tensor& weight, double eps, const at::Tensor& cos,
                           const at::Tensor& sin, int64_t heads) override {
    ++calls;
    const at::Tensor f = y.to(at::kFloat);
    at::Tensor n = f * at::rsqrt(f.pow(2).mean({-1}, true) + eps) * weight;
    if (cos.defined()) {
      const int64_t B = y.size(0), L = y.size(1), C = y.size(2);
      const at::Tensor pairs = n.view({B, L, heads, C / heads / 2, 2});
      const at::Tensor a = pairs.select(-1, 0), b = pairs.select(-1, 1);
      const at::Tensor c = cos.view({1, L, 1, -1}), s = sin.view({1, L, 1, -1});
      n = at::stack({a * c - b * s, a * s + b * c}, -1).view({B, L, C});
    }
    return n.to(y.scalar_type());
  }
  at::Tensor gate_residual(const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate,
                           const at::Tensor& out) override {
    ++calls;
    at::Tensor target = out;
    return target.copy_(gate.defined() ? h + gate_groups(y, gate) : h + y);
  }

  bool supported = true;
  int calls = 0;
};

// ---- An independent float64 reference of the Wan forward pass (per token, loops for RoPE). ----
struct Ref {
  std::map<std::string, at::Tensor> p;
  WanConfig c;

  at::Tensor lin(const at::Tensor& x, const std::string& name) const {
    return at::linear(x, p.at(name + ".weight"), p.at(name + ".bias"));
  }
  static at::Tensor ln(const at::Tensor& x, double eps) {
    at::Tensor mean = x.mean({-1}, true);
    at::Tensor var = (x - mean).pow(2).mean({-1}, true);
    return (x - mean) / (var + eps).sqrt();
  }
  at::Tensor rms(const at::Tensor& x, const std::string& name) const {
    return x / (x.pow(2).mean({-1}, true) + c.eps).sqrt() * p.at(name + ".weight");
  }
  // Rotates interleaved pairs with the closed-form angle of each axis.
  at::Tensor rope(const at::Tensor& x, int64_t F, int64_t H, int64_t W) const {
    const int64_t D = x.size(3), half = D / 2;
    const int64_t ph = half / 3, pt = half - 2 * ph;
    at::Tensor out = x.clone();
    auto xa = x.accessor<double, 4>();
    auto oa = out.accessor<double, 4>();
    for (int64_t b = 0; b < x.size(0); ++b)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            const int64_t l = (f * H + h) * W + w;
            for (int64_t n = 0; n < x.size(2); ++n)
              for (int64_t k = 0; k < half; ++k) {
                double ang;
                if (k < pt)
                  ang = f * std::pow(10000.0, -2.0 * k / (2.0 * pt));
                else if (k < pt + ph)
                  ang = h * std::pow(10000.0, -2.0 * (k - pt) / (2.0 * ph));
                else
                  ang = w * std::pow(10000.0, -2.0 * (k - pt - ph) / (2.0 * ph));
                const double a = xa[b][l][n][2 * k], bb = xa[b][l][n][2 * k + 1];
                oa[b][l][n][2 * k] = a * std::cos(ang) - bb * std::sin(ang);
                oa[b][l][n][2 * k + 1] = a * std::sin(ang) + bb * std::cos(ang);
              }
          }
    return out;
  }
  static at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    at::Tensor s = at::matmul(q.transpose(1, 2), k.transpose(1, 2).transpose(2, 3)) / std::sqrt(double(q.size(3)));
    return at::matmul(at::softmax(s, -1), v.transpose(1, 2)).transpose(1, 2);
  }
  // x [B, C, F, H, W], t_tok [B, L], ctx [B, l, text_dim]
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t_tok, const at::Tensor& ctx_in) const {
    const int64_t B = x.size(0), D = c.dim, N = c.num_heads, hd = D / N;
    const auto& ps = c.patch_size;
    at::Tensor g = at::conv3d(x, p.at("patch_embedding.weight"), p.at("patch_embedding.bias"), {ps[0], ps[1], ps[2]});
    const int64_t F = g.size(2), H = g.size(3), W = g.size(4), L = F * H * W;
    at::Tensor h = g.flatten(2).transpose(1, 2);  // [B, L, D]
    const int64_t half = c.freq_dim / 2;
    at::Tensor k = at::arange(half, at::kDouble);
    at::Tensor args = t_tok.unsqueeze(-1) * at::pow(10000.0, -k / double(half));
    at::Tensor sinus = at::cat({args.cos(), args.sin()}, -1);
    at::Tensor e = lin(at::silu(lin(sinus, "time_embedding.0")), "time_embedding.2");  // [B, L, D]
    at::Tensor e0 = lin(at::silu(e), "time_projection.1").view({B, L, 6, D});
    at::Tensor ctx = at::cat({ctx_in, at::zeros({B, c.text_len - ctx_in.size(1), c.text_dim}, ctx_in.options())}, 1);
    ctx = lin(at::gelu(lin(ctx, "text_embedding.0"), "tanh"), "text_embedding.2");
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const std::string b = "blocks." + std::to_string(i) + ".";
      at::Tensor m = p.at(b + "modulation").unsqueeze(0) + e0;  // [B, L, 6, D]
      auto mi = [&](int64_t j) { return m.select(2, j); };
      at::Tensor y = ln(h, c.eps) * (1 + mi(1)) + mi(0);
      at::Tensor q = rms(lin(y, b + "self_attn.q"), b + "self_attn.norm_q").view({B, L, N, hd});
      at::Tensor kk = rms(lin(y, b + "self_attn.k"), b + "self_attn.norm_k").view({B, L, N, hd});
      at::Tensor v = lin(y, b + "self_attn.v").view({B, L, N, hd});
      at::Tensor a = attend(rope(q, F, H, W), rope(kk, F, H, W), v).reshape({B, L, D});
      h = h + lin(a, b + "self_attn.o") * mi(2);
      y = ln(h, c.eps) * p.at(b + "norm3.weight") + p.at(b + "norm3.bias");
      q = rms(lin(y, b + "cross_attn.q"), b + "cross_attn.norm_q").view({B, L, N, hd});
      kk = rms(lin(ctx, b + "cross_attn.k"), b + "cross_attn.norm_k").view({B, c.text_len, N, hd});
      v = lin(ctx, b + "cross_attn.v").view({B, c.text_len, N, hd});
      h = h + lin(attend(q, kk, v).reshape({B, L, D}), b + "cross_attn.o");
      y = ln(h, c.eps) * (1 + mi(4)) + mi(3);
      h = h + lin(at::gelu(lin(y, b + "ffn.0"), "tanh"), b + "ffn.2") * mi(5);
    }
    at::Tensor m = p.at("head.modulation").unsqueeze(0) + e.unsqueeze(2);  // [B, L, 2, D]
    at::Tensor out = lin(ln(h, c.eps) * (1 + m.select(2, 1)) + m.select(2, 0), "head.head");
    const int64_t C = c.out_dim;
    return out.view({B, F, H, W, ps[0], ps[1], ps[2], C})
        .permute({0, 7, 1, 4, 2, 5, 3, 6})
        .reshape({B, C, F * ps[0], H * ps[1], W * ps[2]});
  }
};

Ref make_ref(WanModelImpl& model) {
  Ref r;
  r.c = model.config();
  for (auto& [name, t] : wan_named_parameters(model)) {
    r.p[name] = t.detach().to(at::kDouble);
  }
  return r;
}

}  // namespace

class tst_dit : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { c10::GradMode::set_enabled(false); }
  void config5bCounts();
  void detectFromWeights_data();
  void detectFromWeights();
  void detectErrors();
  void ropeClosedForm();
  void ropeSplit_data();
  void ropeSplit();
  void forwardMatchesReference();
  void perFrameEqualsPerToken();
  void shapeContract_data();
  void shapeContract();
  void badInputs_data();
  void badInputs();
  void contextPadding();
  void bf16Weights();
  void pluginFullMatchesDense();
  void pluginCallNeedsPreparation();
  void memoryEstimate();
  void gpuMatchesCpu();
  void fusedBlocksMatchAten();
  void gpuFusedKernels_data();
  void gpuFusedKernels();
};

void tst_dit::config5bCounts() {
  const WanConfig c = WanConfig::ti2v_5b();
  const ShapeMap shapes = c.parameter_shapes();
  QCOMPARE(shapes.size(), size_t(825));
  int64_t total = 0;
  for (const auto& [name, s] : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    total += n;
  }
  QCOMPARE(total, int64_t(4999787712));
  QCOMPARE(c.head_dim(), int64_t(128));
  QCOMPARE(c.patch_volume() * c.out_dim, int64_t(192));
}

void tst_dit::detectFromWeights_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<bool>("hint");
  QTest::newRow("5B, no hint (head_dim 128 rule)") << 0 << false;
  QTest::newRow("5B, config.json hint") << 0 << true;
  QTest::newRow("tiny, config.json hint") << 1 << true;
  QTest::newRow("tiny with extras, no hint (proj_l gives head_dim)") << 2 << false;
}

void tst_dit::detectFromWeights() {
  QFETCH(int, which);
  QFETCH(bool, hint);
  WanConfig c = which == 0 ? WanConfig::ti2v_5b() : small_config();
  if (which == 2) {
    c.with_gate_compress = true;
    c.with_proj_l = true;
    c.text_len = 512;  // shapes cannot tell text_len: the default is used without a hint
  }
  const nlohmann::json j = c.to_json();
  const WanConfig d = WanConfig::detect_from_weights(c.parameter_shapes(), hint ? &j : nullptr);
  QVERIFY(d == c);
}

void tst_dit::detectErrors() {
  ShapeMap s = small_config().parameter_shapes();
  // dim 64 without a head hint: cannot tell the heads.
  try {
    WanConfig::detect_from_weights(s, nullptr);
    QFAIL("expected an error");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("config.json") != std::string::npos, e.what());
  }
  s.erase("head.head.weight");
  const nlohmann::json j = small_config().to_json();
  try {
    WanConfig::detect_from_weights(s, &j);
    QFAIL("expected an error");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("'head.head.weight'") != std::string::npos, e.what());
  }
}

void tst_dit::ropeClosedForm() {
  const int64_t D = 128;
  const std::array<int64_t, 3> grid{3, 4, 5};
  const RopeTables t = rope_tables(D, grid, 10000.0, c10::Device(c10::kCPU));
  QCOMPARE(t.cos.size(0), int64_t(60));
  QCOMPARE(t.cos.size(1), int64_t(64));
  auto ca = t.cos.accessor<float, 2>();
  auto sa = t.sin.accessor<float, 2>();
  for (int64_t f = 0; f < 3; ++f)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 5; ++w)
        for (int64_t k = 0; k < 64; ++k) {
          // 22 pairs over 44 dims for t, then 21 pairs over 42 dims for h and for w.
          double ang = k < 22   ? f * std::pow(10000.0, -2.0 * k / 44.0)
                       : k < 43 ? h * std::pow(10000.0, -2.0 * (k - 22) / 42.0)
                                : w * std::pow(10000.0, -2.0 * (k - 43) / 42.0);
          const int64_t l = (f * 4 + h) * 5 + w;
          QVERIFY(std::abs(ca[l][k] - std::cos(ang)) < 1e-6);
          QVERIFY(std::abs(sa[l][k] - std::sin(ang)) < 1e-6);
        }
  // rope_apply rotates interleaved pairs: check one pair by hand.
  at::Tensor x = randn_seeded({1, 60, 2, D}, 3);
  at::Tensor y = rope_apply(x, t);
  const int64_t l = (2 * 4 + 3) * 5 + 4, k = 30;  // an h-axis pair
  const double ang = 3 * std::pow(10000.0, -2.0 * (k - 22) / 42.0);
  const double a = x[0][l][1][2 * k].item<double>(), b = x[0][l][1][2 * k + 1].item<double>();
  QVERIFY(std::abs(y[0][l][1][2 * k].item<double>() - (a * std::cos(ang) - b * std::sin(ang))) < 1e-5);
  QVERIFY(std::abs(y[0][l][1][2 * k + 1].item<double>() - (a * std::sin(ang) + b * std::cos(ang))) < 1e-5);
  // Norm of every pair is preserved.
  QVERIFY(rel_err(y.norm(2, {-1}), x.norm(2, {-1})) < 1e-6);
}

void tst_dit::ropeSplit_data() {
  QTest::addColumn<int>("head_dim");
  QTest::addColumn<int>("t_pairs");
  QTest::addColumn<int>("hw_pairs");
  QTest::newRow("128 (Wan)") << 128 << 22 << 21;
  QTest::newRow("64") << 64 << 12 << 10;
  QTest::newRow("32 (tiny)") << 32 << 6 << 5;
}

void tst_dit::ropeSplit() {
  QFETCH(int, head_dim);
  QFETCH(int, t_pairs);
  QFETCH(int, hw_pairs);
  const auto p = rope_axis_pairs(head_dim);
  QCOMPARE(int(p[0]), t_pairs);
  QCOMPARE(int(p[1]), hw_pairs);
  QCOMPARE(int(p[2]), hw_pairs);
}

void tst_dit::forwardMatchesReference() {
  WanModel model = wan_make_model(small_config(), 11);
  const Ref ref = make_ref(*model);
  at::Tensor x = randn_seeded({2, 4, 3, 4, 6}, 1);  // grid 3 x 2 x 3 = 18 tokens
  at::Tensor ctx = randn_seeded({2, 5, 16}, 2);
  at::Tensor t = at::tensor({700.0f, 0.0f, 700.0f, 250.0f, 250.0f, 250.0f}).view({2, 3});  // per frame
  at::Tensor out = model->forward(x, t, ctx, AttentionRun{});
  QCOMPARE(out.sizes().vec(), (std::vector<int64_t>{2, 4, 3, 4, 6}));
  QCOMPARE(out.scalar_type(), at::kFloat);
  at::Tensor t_tok = t.to(at::kDouble).repeat_interleave(6, 1);  // [2, 18]
  at::Tensor expected = ref.forward(x.to(at::kDouble), t_tok, ctx.to(at::kDouble));
  const double err = rel_err(out, expected);
  QVERIFY2(err < 1e-4, qPrintable(QString("relative error %1").arg(err)));
}

void tst_dit::perFrameEqualsPerToken() {
  WanModel model = wan_make_model(small_config(), 5);
  at::Tensor x = randn_seeded({1, 4, 4, 4, 4}, 7);  // grid 4 x 2 x 2: 4 tokens per frame
  at::Tensor ctx = randn_seeded({1, 8, 16}, 8);
  at::Tensor t_frame = at::tensor({0.0f, 999.0f, 999.0f, 999.0f}).view({1, 4});
  at::Tensor t_token = t_frame.repeat_interleave(4, 1);  // [1, 16]
  at::Tensor a = model->forward(x, t_frame, ctx, AttentionRun{});
  at::Tensor b = model->forward(x, t_token, ctx, AttentionRun{});
  QVERIFY2(rel_err(a, b) < 1e-6, qPrintable(QString::number(rel_err(a, b))));
  // Per-frame timesteps really matter: frame 0 at t=0 differs from all frames at 999.
  at::Tensor c = model->forward(x, at::full({1}, 999.0f), ctx, AttentionRun{});
  QVERIFY(rel_err(a.select(2, 0), c.select(2, 0)) > 1e-3);
  QVERIFY(rel_err(a.narrow(2, 1, 3), c.narrow(2, 1, 3)) > 1e-6);  // attention mixes frames
}

void tst_dit::shapeContract_data() {
  QTest::addColumn<int>("batch");
  QTest::addColumn<int>("frames");
  QTest::addColumn<int>("height");
  QTest::addColumn<int>("width");
  QTest::newRow("1x1x2x2 (one token)") << 1 << 1 << 2 << 2;
  QTest::newRow("1x3x4x6") << 1 << 3 << 4 << 6;
  QTest::newRow("2x2x6x4") << 2 << 2 << 6 << 4;
}

void tst_dit::shapeContract() {
  QFETCH(int, batch);
  QFETCH(int, frames);
  QFETCH(int, height);
  QFETCH(int, width);
  WanModel model = wan_make_model(small_config(), 2);
  at::Tensor x = randn_seeded({batch, 4, frames, height, width}, 1);
  at::Tensor out = model->forward(x, at::full({batch}, 500.0f), randn_seeded({batch, 3, 16}, 2), AttentionRun{});
  QCOMPARE(out.sizes(), x.sizes());
  QCOMPARE(out.scalar_type(), at::kFloat);
  QVERIFY(out.isfinite().all().item<bool>());
}

void tst_dit::badInputs_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QString>("needle");
  QTest::newRow("wrong channels") << 0 << "[B, 4, F, H, W]";
  QTest::newRow("odd height") << 1 << "multiples of the patch";
  QTest::newRow("timestep groups") << 2 << "group count";
  QTest::newRow("context too long") << 3 << "more than text_len";
  QTest::newRow("context dim") << 4 << "context must be";
}

void tst_dit::badInputs() {
  QFETCH(int, which);
  QFETCH(QString, needle);
  WanModel model = wan_make_model(small_config(), 2);
  at::Tensor x = randn_seeded({1, 4, 3, 4, 4}, 1);
  at::Tensor t = at::full({1}, 10.0f);
  at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  if (which == 0) x = randn_seeded({1, 5, 3, 4, 4}, 1);
  if (which == 1) x = randn_seeded({1, 4, 3, 5, 4}, 1);
  if (which == 2) t = at::full({1, 5}, 10.0f);
  if (which == 3) ctx = randn_seeded({1, 9, 16}, 2);
  if (which == 4) ctx = randn_seeded({1, 3, 15}, 2);
  try {
    model->forward(x, t, ctx, AttentionRun{});
    QFAIL("expected an error");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find(needle.toStdString()) != std::string::npos, e.what());
  }
}

void tst_dit::contextPadding() {
  WanModel model = wan_make_model(small_config(), 9);
  at::Tensor x = randn_seeded({1, 4, 2, 4, 4}, 1);
  at::Tensor t = at::full({1}, 300.0f);
  at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  at::Tensor padded = at::cat({ctx, at::zeros({1, 5, 16})}, 1);
  at::Tensor a = model->forward(x, t, ctx, AttentionRun{});
  at::Tensor b = model->forward(x, t, padded, AttentionRun{});
  QVERIFY(at::allclose(a, b, 1e-6, 1e-6));
  // Padding rows are not masked: a context padded with non-zero rows gives another result.
  at::Tensor other = at::cat({ctx, at::full({1, 5, 16}, 0.5f)}, 1);
  QVERIFY(!at::allclose(a, model->forward(x, t, other, AttentionRun{}), 1e-4, 1e-4));
}

void tst_dit::bf16Weights() {
  WanModel ref = wan_make_model(small_config(), 4);
  WanModelOptions o;
  o.config = small_config();
  o.compute_dtype = at::kBFloat16;
  WanModel low(o);
  wan_init_weights(*low, 4);
  for (auto& [name, p] : wan_named_parameters(*low)) {
    const bool fp32 = name.find("modulation") != std::string::npos || name.find("norm") != std::string::npos ||
                      name.rfind("time_", 0) == 0;
    QVERIFY2(p.scalar_type() == (fp32 ? at::kFloat : at::kBFloat16), name.c_str());
  }
  at::Tensor x = randn_seeded({1, 4, 2, 4, 4}, 1);
  at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  at::Tensor a = ref->forward(x, at::full({1}, 400.0f), ctx, AttentionRun{});
  at::Tensor b = low->forward(x, at::full({1}, 400.0f), ctx, AttentionRun{});
  QCOMPARE(b.scalar_type(), at::kFloat);
  const double err = rel_err(b, a);
  QVERIFY2(err < 5e-2, qPrintable(QString::number(err)));
}

void tst_dit::pluginFullMatchesDense() {
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  WanConfig c = small_config();
  WanModel model = wan_make_model(c, 21);
  at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 1);  // grid 4 x 4 x 4 = one VSA tile
  at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  at::Tensor t = at::full({1}, 600.0f);
  at::Tensor dense = model->forward(x, t, ctx, AttentionRun{});
  AttentionChoice choice{&report.plugin->backend(), "full", {}};
  const auto prepared = [&](const WanModel& m) {
    return choice.prepare(m->config(), m->device(), m->compute_dtype(), x.sizes());
  };
  at::Tensor full = model->forward(x, t, ctx, prepared(model));
  QVERIFY2(rel_err(full, dense) < 1e-5, qPrintable(QString::number(rel_err(full, dense))));

  // A dense checkpoint run with vsa at sparsity 0 keeps every tile: equal to full attention when
  // the gate is absent (zero) and the fine branch covers all keys.
  c.with_gate_compress = true;
  WanModel gated = wan_make_model(c, 21);
  for (auto& [name, p] : wan_named_parameters(*gated)) {
    if (name.find("to_gate_compress") != std::string::npos) p.zero_();
  }
  choice.method = "vsa";
  choice.params = {{"sparsity", 0.0}};
  at::Tensor vsa = gated->forward(x, t, ctx, prepared(gated));
  QVERIFY2(rel_err(vsa, dense) < 1e-4, qPrintable(QString::number(rel_err(vsa, dense))));
}

void tst_dit::pluginCallNeedsPreparation() {
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  WanModel model = wan_make_model(small_config(), 2);
  AttentionRun run;
  run.backend = &report.plugin->backend();
  try {
    model->forward(randn_seeded({1, 4, 1, 4, 4}, 1), at::full({1}, 1.0f), randn_seeded({1, 2, 16}, 2), run);
    QFAIL("expected an error");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("needs a preparation") != std::string::npos, e.what());
  }
  // A method the plugin does not have is refused when it is prepared, naming it.
  const AttentionChoice flash{&report.plugin->backend(), "flash", {}};
  try {
    flash.prepare(model->config(), model->device(), model->compute_dtype(), {4, 1, 4, 4});
    QFAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("unknown attention method 'flash'") != std::string::npos, e.what());
  }
}

void tst_dit::memoryEstimate() {
  const WanConfig c = WanConfig::ti2v_5b();
  // fp32 everywhere: exactly 4 bytes per parameter.
  const auto f32 = wan_estimate_memory(c, at::kFloat, {31, 44, 80}, 1);
  QCOMPARE(f32.weight_bytes, int64_t(4999787712) * 4);
  // bf16 matmul weights: 2 bytes each, plus 2 more for every fp32-kept parameter.
  int64_t kept = 0;
  for (const auto& [name, s] : c.parameter_shapes()) {
    const bool fp32 = name.find("modulation") != std::string::npos || name.find("norm") != std::string::npos ||
                      name.rfind("time_", 0) == 0;
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    if (fp32) kept += n;
  }
  const auto bf16 = wan_estimate_memory(c, at::kBFloat16, {31, 44, 80}, 2);
  QCOMPARE(bf16.weight_bytes, int64_t(4999787712) * 2 + kept * 2);
  // The same count from a real (tiny) model's parameters.
  WanModelOptions o;
  o.config = small_config();
  o.compute_dtype = at::kBFloat16;
  WanModel tiny(o);
  int64_t bytes = 0;
  for (auto& [name, p] : wan_named_parameters(*tiny)) bytes += p.numel() * p.element_size();
  QCOMPARE(wan_estimate_memory(small_config(), at::kBFloat16, {2, 4, 4}, 1).weight_bytes, bytes);
  // 704x1280x121, CFG batched: the DiT fits a 24 GB GPU; activations grow with the batch.
  QVERIFY(bf16.total_bytes() < int64_t(24) * 1000 * 1000 * 1000);
  QVERIFY(bf16.activation_bytes > wan_estimate_memory(c, at::kBFloat16, {31, 44, 80}, 1).activation_bytes);
}

void tst_dit::gpuMatchesCpu() {
  if (!at::hasCUDA()) {
    WanModelOptions o;
    o.config = small_config();
    o.device = c10::Device(c10::kCUDA, 0);
    try {
      WanModel m(o);
      QFAIL("expected an error");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("no GPU support") != std::string::npos, e.what());
    }
    QSKIP("No GPU: the bf16 GPU forward was not run (the clear error for a GPU request was checked).");
  }
  // Head dim 64 (the smallest the GPU attention kernels take), with both sparse extras, on a grid of
  // 8 x 8 x 8 tokens = 8 VSA tiles so that sparsity 0.5 really drops tiles.
  WanConfig c = small_config();
  c.dim = 128;
  c.ffn_dim = 256;
  c.with_gate_compress = true;
  c.with_proj_l = true;
  WanModel cpu = wan_make_model(c, 13);
  WanModelOptions o;
  o.config = c;
  o.device = c10::Device(c10::kCUDA, 0);
  o.compute_dtype = at::kBFloat16;
  WanModel gpu(o);
  wan_init_weights(*gpu, 13);
  const at::Tensor x = randn_seeded({1, 4, 8, 16, 16}, 1);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  const at::Tensor t = at::tensor({0.0f, 500.0f, 500.0f, 500.0f, 900.0f, 900.0f, 900.0f, 900.0f}).view({1, 8});
  try {
    const at::Tensor want = cpu->forward(x, t, ctx, AttentionRun{});
    const at::Tensor got = gpu->forward(x.cuda(), t.cuda(), ctx.cuda(), AttentionRun{});
    QCOMPARE(got.device().type(), c10::kCUDA);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QVERIFY2(rel_err(got.cpu(), want) < 5e-2, qPrintable(QString::number(rel_err(got.cpu(), want))));
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  for (const std::string method : {"full", "vsa", "sla_star"}) {
    AttentionChoice choice{&report.plugin->backend(), method, {}};
    if (method != "full") choice.params = {{"sparsity", 0.5}};
    try {
      const AttentionRun on_cpu = choice.prepare(cpu->config(), cpu->device(), cpu->compute_dtype(), x.sizes());
      AttentionRun run = choice.prepare(gpu->config(), gpu->device(), gpu->compute_dtype(), x.sizes());
      const at::Tensor want = cpu->forward(x, t, ctx, on_cpu);
      const at::Tensor got = gpu->forward(x.cuda(), t.cuda(), ctx.cuda(), run).cpu();
      const double err = rel_err(got, want);
      QVERIFY2(err < 5e-2, qPrintable(QString::fromStdString(method) + ": rel-L2 " + QString::number(err)));
      // The same in inference mode on the fused elementwise kernels.
      c10::InferenceMode inference;
      run.dit_kernels = report.plugin->backend().dit_kernels();
      QVERIFY(fused_kernels(run, o.device, at::kBFloat16) != nullptr);
      const at::Tensor fused = gpu->forward(x.cuda(), t.cuda(), ctx.cuda(), run).cpu();
      const double to_aten = rel_err(fused, got), to_cpu = rel_err(fused, want);
      QVERIFY2(to_aten < 1e-2 && to_cpu < 5e-2,
               qPrintable(QString("%1 fused: rel-L2 %2 to the ATen GPU path, %3 to the CPU model")
                              .arg(QString::fromStdString(method)).arg(to_aten).arg(to_cpu)));
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString::fromStdString(method) + ": " + e.what()));
    }
  }
  // Head dim 32 is a shape the kernels do not take: a clear error, never a silent CPU fallback.
  WanModelOptions small = o;
  small.config = small_config();
  WanModel gpu_small(small);
  wan_init_weights(*gpu_small, 13);
  const AttentionChoice full{&report.plugin->backend(), "full", {}};
  try {
    full.prepare(gpu_small->config(), gpu_small->device(), gpu_small->compute_dtype(), {4, 4, 8, 8});
    QFAIL("expected an error for head dim 32 on the GPU");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("head") != std::string::npos, e.what());
  }
  gpu = nullptr;
  gpu_small = nullptr;
}

// The blocks' fused path (forward_fused) with the ATen reference kernels equals the ATen path, runs
// only in inference mode and only where the kernels say they run.
void tst_dit::fusedBlocksMatchAten() {
  const WanConfig c = small_config();
  WanModel model = wan_make_model(c, 13);
  const at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 1);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 2);
  const at::Tensor t = at::tensor({0.0f, 300.0f, 600.0f, 900.0f}).view({1, 4});
  const at::Tensor want = model->forward(x, t, ctx, AttentionRun{});
  AtenDitKernels kernels;
  AttentionRun run;
  run.dit_kernels = &kernels;
  QVERIFY(at::equal(model->forward(x, t, ctx, run), want));  // not in inference mode: ATen ops
  QCOMPARE(kernels.calls, 0);
  c10::InferenceMode inference;
  const at::Tensor got = model->forward(x, t, ctx, run);
  // Per block: 3 LayerNorms, 4 q/k RMSNorms (self and cross), 3 residual adds.
  QCOMPARE(kernels.calls, 10 * int(c.num_layers));
  QVERIFY2(rel_err(got, want) < 1e-5, qPrintable(QString::number(rel_err(got, want))));
  kernels.supported = false;
  kernels.calls = 0;
  QVERIFY(at::equal(model->forward(x, t, ctx, run), want));
  QCOMPARE(kernels.calls, 0);
}

void tst_dit::gpuFusedKernels_data() {
  QTest::addColumn<int>("heads");
  QTest::addColumn<int>("dim");
  QTest::addColumn<int>("groups");
  QTest::addColumn<bool>("fp16");
  QTest::newRow("5B head dim 128, bf16") << 2 << 256 << 3 << false;
  QTest::newRow("head dim 64, 3 heads, fp16") << 3 << 192 << 1 << true;
  QTest::newRow("a row longer than the block") << 24 << 3072 << 12 << false;
}

// Each fused kernel against the ATen reference on the CPU (same inputs, fp32 maths there).
void tst_dit::gpuFusedKernels() {
  if (!at::hasCUDA()) QSKIP("No GPU: the fused DiT kernels were not run.");
  QFETCH(int, heads);
  QFETCH(int, dim);
  QFETCH(int, groups);
  QFETCH(bool, fp16);
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  plugin::DitKernels* k = report.plugin->backend().dit_kernels();
  QVERIFY(k != nullptr);
  const c10::Device cuda(c10::kCUDA, 0);
  const at::ScalarType half = fp16 ? at::kHalf : at::kBFloat16;
  QVERIFY(k->supports(cuda, half));
  QVERIFY(!k->supports(c10::Device(c10::kCPU), half));
  QVERIFY(!k->supports(cuda, at::kFloat));
  AtenDitKernels ref;
  const std::array<int64_t, 3> grid{2, 3, 4};
  const int64_t B = 2, L = grid[0] * grid[1] * grid[2];
  const at::Tensor x = randn_seeded({B, L, dim}, 3) * 3.0 + 1.0;
  const at::Tensor m = randn_seeded({B, groups, 6, dim}, 4) * 0.5;  // strided shift/scale, as the model's
  const at::Tensor w = randn_seeded({dim}, 5) * 0.1 + 1.0, b = randn_seeded({dim}, 6) * 0.1;
#define CHECK_CLOSE(got, want, tol, what)                                                      \
  do {                                                                                         \
    const double e_ = rel_err((got).cpu().to(at::kFloat), (want).to(at::kFloat));              \
    QVERIFY2(e_ < (tol), qPrintable(QString("%1: rel-L2 %2").arg(what).arg(e_)));              \
  } while (0)
  try {
    const at::Tensor mg = m.to(cuda);
    CHECK_CLOSE(k->layer_norm_modulate(x.to(cuda), {}, {}, 1e-6, mg.select(2, 0), mg.select(2, 1), half),
                ref.layer_norm_modulate(x, {}, {}, 1e-6, m.select(2, 0), m.select(2, 1), at::kFloat), 1e-2,
                "LayerNorm + modulation");
    CHECK_CLOSE(k->layer_norm_modulate(x.to(cuda), w.to(cuda), b.to(cuda), 1e-6, {}, {}, half),
                ref.layer_norm_modulate(x, w, b, 1e-6, {}, {}, at::kFloat), 1e-2, "affine LayerNorm");
    const at::Tensor y = (randn_seeded({B, L, dim}, 7) * 2.0).to(half);
    const RopeTables rope = rope_tables(dim / heads, grid, 10000.0, c10::Device(c10::kCPU));
    CHECK_CLOSE(k->rms_norm_rope(y.to(cuda), w.to(cuda), 1e-6, rope.cos.to(cuda), rope.sin.to(cuda), heads),
                ref.rms_norm_rope(y, w, 1e-6, rope.cos, rope.sin, heads), 1e-2, "RMSNorm + RoPE");
    CHECK_CLOSE(k->rms_norm_rope(y.to(cuda), w.to(cuda), 1e-6, {}, {}, heads),
                ref.rms_norm_rope(y, w, 1e-6, {}, {}, heads), 1e-2, "RMSNorm");
    at::Tensor h = x.to(cuda);
    CHECK_CLOSE(k->gate_residual(h, y.to(cuda), mg.select(2, 2), h), ref.gate_residual(x, y, m.select(2, 2), x.clone()),
                1e-6, "gated residual, in place");
    CHECK_CLOSE(h, x + gate_groups(y, m.select(2, 2)), 1e-6, "the residual stream written in place");
    CHECK_CLOSE(k->gate_residual(x.to(cuda), y.to(cuda), {}, at::empty_like(h)), x + y.to(at::kFloat), 1e-6,
                "residual");
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
#undef CHECK_CLOSE
  // Bad input: a clear error naming the tensor, never a launch on a wrong layout.
  try {
    k->layer_norm_modulate(x.to(cuda).transpose(0, 1), {}, {}, 1e-6, {}, {}, half);
    QFAIL("expected an error for a non-contiguous x");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("x must be a contiguous") != std::string::npos, e.what());
  }
}

QTEST_GUILESS_MAIN(tst_dit)
#include "tst_dit.moc"
