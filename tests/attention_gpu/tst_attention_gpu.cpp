// GPU suite of the attention plugin (label gpu): every GPU kernel against the CPU reference.
//  - the device path's block-sparse forward (out, lse) and backward (dq, dk, dv) against CpuPath on
//    the same bf16/fp16 values (upcast to fp32 for the CPU): forward rel-L2 < 2e-2, gradients < 5e-2,
//    at input scales 1, 4, 16, ragged tiles, B > 1, head dims 64/128, sparsity 0..0.95;
//  - GPU top-k selection and list inversion equal the ATen reference exactly (ties included);
//  - backward determinism (two runs, identical bits); every tuning variant gives the same bits;
//  - full, vsa and sla_star end to end through the plugin backend (forward + autograd) on ragged
//    grids with S not a multiple of 64, against the same backend on the CPU;
//  - unsupported shapes and dtypes give errors, never a CPU fallback.
// Skips cleanly when the build has no GPU path or the machine has no GPU.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randn_like.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/autograd.h>

#include "plugins/attention/attention_plugin.h"
#include "plugins/attention/cpu_path.h"
#include "plugins/attention/device_path.h"
#include "plugins/attention/tile_selection.h"
#ifdef VIDGRAPH_ATTENTION_GPU
#include "plugins/attention/gpu/gpu_path.h"
#endif

#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <string>

using namespace vidgraph;
using attention::SparseBackwardArgs;
using attention::SparseForwardArgs;

namespace {

double rel_l2(const at::Tensor& got, const at::Tensor& ref) {
  const at::Tensor g = got.detach().to(at::kCPU).to(at::kDouble);
  const at::Tensor r = ref.detach().to(at::kCPU).to(at::kDouble);
  return (g - r).norm().item<double>() / std::max(r.norm().item<double>(), 1e-30);
}

bool all_finite(const at::Tensor& t) { return t.detach().to(at::kCPU).isfinite().all().item<bool>(); }

// Tiled [B, H, N*64, D] inputs of one case: fp32 values already rounded to `dtype`, pads zero.
struct TiledCase {
  at::Tensor q, k, v, dout;  // CPU fp32
  at::Tensor tile_sizes;     // int32 [N]
  at::Tensor q2k;            // int32 [B, H, N, topk] (CPU)
  at::Tensor k2q, k2q_count;
};

TiledCase make_case(int64_t b, int64_t h, int64_t n, int64_t d, at::ScalarType dtype, double scale,
                    double sparsity, bool ragged) {
  TiledCase c;
  c.tile_sizes = ragged ? at::randint(1, 65, {n}, at::kInt) : at::full({n}, 64, at::kInt);
  if (ragged) c.tile_sizes[0] = 64;
  // slot mask [1, 1, N*64, 1]
  const at::Tensor slot = at::arange(64, at::kInt).unsqueeze(0);
  const at::Tensor mask = (slot < c.tile_sizes.unsqueeze(1)).reshape({1, 1, n * 64, 1}).to(at::kFloat);
  auto make = [&](double s) { return ((at::randn({b, h, n * 64, d}) * s) * mask).to(dtype).to(at::kFloat); };
  c.q = make(scale);
  c.k = make(scale);
  c.v = make(scale);
  c.dout = make(1.0);
  const int64_t topk = attention::topk_for_sparsity(sparsity, n);
  const at::Tensor scores = at::randn({b, h, n, n});
  const attention::TopkSelection sel = attention::select_topk_aten(scores, topk);
  c.q2k = sel.q2k;
  c.k2q = sel.k2q;
  c.k2q_count = sel.k2q_count;
  return c;
}

at::Tensor dev(const at::Tensor& t, at::ScalarType dtype) { return t.to(at::kCUDA).to(dtype).contiguous(); }
at::Tensor dev_int(const at::Tensor& t) { return t.to(at::kCUDA).contiguous(); }

SparseForwardArgs forward_args(const TiledCase& c, bool on_gpu, at::ScalarType dtype) {
  SparseForwardArgs a;
  a.q = on_gpu ? dev(c.q, dtype) : c.q;
  a.k = on_gpu ? dev(c.k, dtype) : c.k;
  a.v = on_gpu ? dev(c.v, dtype) : c.v;
  a.tile_sizes = on_gpu ? dev_int(c.tile_sizes) : c.tile_sizes;
  a.q2k = on_gpu ? dev_int(c.q2k) : c.q2k;
  a.tile_volume = 64;
  a.scale = 1.0 / std::sqrt(double(c.q.size(3)));
  return a;
}

SparseBackwardArgs backward_args(const TiledCase& c, const SparseForwardArgs& f, const at::Tensor& out,
                                 const at::Tensor& lse, bool on_gpu, at::ScalarType dtype) {
  SparseBackwardArgs a;
  a.dout = on_gpu ? dev(c.dout, dtype) : c.dout;
  a.q = f.q;
  a.k = f.k;
  a.v = f.v;
  a.out = out;
  a.lse = lse;
  a.tile_sizes = f.tile_sizes;
  a.q2k = f.q2k;
  a.k2q = on_gpu ? dev_int(c.k2q) : c.k2q;
  a.k2q_count = on_gpu ? dev_int(c.k2q_count) : c.k2q_count;
  a.tile_volume = 64;
  a.scale = f.scale;
  return a;
}

// Real query rows only (pad rows are computed but discarded): [B, H, Sp, ...] -> rows kept.
at::Tensor real_rows(const at::Tensor& x, const at::Tensor& tile_sizes) {
  const int64_t n = tile_sizes.numel();
  const at::Tensor slot = at::arange(64, at::kInt).unsqueeze(0);
  const at::Tensor keep = (slot < tile_sizes.unsqueeze(1)).reshape({n * 64}).nonzero().squeeze(1);
  return x.detach().to(at::kCPU).index_select(2, keep);
}

}  // namespace

class tst_AttentionGpu : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<attention::DevicePath> gpu_;
  attention::CpuPath cpu_;

  void case_table();

 private Q_SLOTS:
  void initTestCase();
  void forward_matches_cpu_data() { case_table(); }
  void forward_matches_cpu();
  void backward_matches_cpu_data() { case_table(); }
  void backward_matches_cpu();
  void backward_is_deterministic();
  void tuning_variants_agree();
  void select_topk_matches_aten();
  void methods_match_cpu_data();
  void methods_match_cpu();
  void bad_input_is_an_error_data();
  void bad_input_is_an_error();
};

void tst_AttentionGpu::initTestCase() {
#ifndef VIDGRAPH_ATTENTION_GPU
  QSKIP("built without the attention GPU path (VIDGRAPH_GPU=off or a CPU-only LibTorch)");
#else
  if (!at::hasCUDA()) QSKIP("no GPU on this machine");
  gpu_ = std::make_unique<attention::GpuPath>();
  at::manual_seed(1234);
#endif
}

void tst_AttentionGpu::case_table() {
  QTest::addColumn<int>("batch");
  QTest::addColumn<int>("heads");
  QTest::addColumn<int>("tiles");
  QTest::addColumn<int>("dim");
  QTest::addColumn<bool>("bf16");
  QTest::addColumn<double>("scale");
  QTest::addColumn<double>("sparsity");
  QTest::addColumn<bool>("ragged");
  for (int dim : {64, 128})
    for (double scale : {1.0, 4.0, 16.0})
      for (double sparsity : {0.0, 0.5, 0.875, 0.95}) {
        const bool bf16 = !(dim == 64 && sparsity == 0.5);
        const bool ragged = sparsity != 0.875 || scale == 4.0;
        const int batch = sparsity == 0.0 ? 2 : 1;
        const std::string name = "d" + std::to_string(dim) + (bf16 ? "_bf16" : "_fp16") + "_x" +
                                 std::to_string(int(scale)) + "_sp" + std::to_string(sparsity).substr(0, 5) +
                                 (ragged ? "_ragged" : "_full") + "_b" + std::to_string(batch);
        QTest::newRow(name.c_str()) << batch << 3 << 20 << dim << bf16 << scale << sparsity << ragged;
      }
}

#define FETCH_CASE                                                                                  \
  QFETCH(int, batch);                                                                               \
  QFETCH(int, heads);                                                                               \
  QFETCH(int, tiles);                                                                               \
  QFETCH(int, dim);                                                                                 \
  QFETCH(bool, bf16);                                                                               \
  QFETCH(double, scale);                                                                            \
  QFETCH(double, sparsity);                                                                         \
  QFETCH(bool, ragged);                                                                             \
  const at::ScalarType dtype = bf16 ? at::kBFloat16 : at::kHalf;                                   \
  const TiledCase c = make_case(batch, heads, tiles, dim, dtype, scale, sparsity, ragged)

void tst_AttentionGpu::forward_matches_cpu() {
  FETCH_CASE;
  const SparseForwardArgs fc = forward_args(c, false, dtype), fg = forward_args(c, true, dtype);
  const auto ref = cpu_.sparse_forward(fc);
  const auto got = gpu_->sparse_forward(fg);
  QCOMPARE(got.out.scalar_type(), dtype);
  QVERIFY(all_finite(got.out));
  const double e_out = rel_l2(real_rows(got.out, c.tile_sizes), real_rows(ref.out, c.tile_sizes));
  const double e_lse = rel_l2(real_rows(got.lse.unsqueeze(-1), c.tile_sizes),
                              real_rows(ref.lse.unsqueeze(-1), c.tile_sizes));
  qInfo("rel-L2 out %.3g lse %.3g", e_out, e_lse);
  QVERIFY2(e_out < 2e-2, qPrintable(QString("out rel-L2 %1").arg(e_out)));
  QVERIFY2(e_lse < 1e-3, qPrintable(QString("lse rel-L2 %1").arg(e_lse)));
}

void tst_AttentionGpu::backward_matches_cpu() {
  FETCH_CASE;
  const SparseForwardArgs fc = forward_args(c, false, dtype), fg = forward_args(c, true, dtype);
  const auto rf = cpu_.sparse_forward(fc);
  const auto gf = gpu_->sparse_forward(fg);
  const auto ref = cpu_.sparse_backward(backward_args(c, fc, rf.out, rf.lse, false, dtype));
  const auto got = gpu_->sparse_backward(backward_args(c, fg, gf.out, gf.lse, true, dtype));
  const std::pair<const at::Tensor*, const at::Tensor*> pairs[] = {
      {&got.dq, &ref.dq}, {&got.dk, &ref.dk}, {&got.dv, &ref.dv}};
  const char* names[] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; ++i) {
    QVERIFY(all_finite(*pairs[i].first));
    // dq over real query rows; dk, dv over real key rows (pad keys get exactly zero)
    const double e = rel_l2(real_rows(*pairs[i].first, c.tile_sizes), real_rows(*pairs[i].second, c.tile_sizes));
    qInfo("rel-L2 %s %.3g", names[i], e);
    QVERIFY2(e < 5e-2, qPrintable(QString("%1 rel-L2 %2").arg(names[i]).arg(e)));
  }
}

void tst_AttentionGpu::backward_is_deterministic() {
  const TiledCase c = make_case(2, 4, 24, 128, at::kBFloat16, 4.0, 0.75, true);
  const SparseForwardArgs f = forward_args(c, true, at::kBFloat16);
  const auto o = gpu_->sparse_forward(f);
  const auto a = gpu_->sparse_backward(backward_args(c, f, o.out, o.lse, true, at::kBFloat16));
  const auto b = gpu_->sparse_backward(backward_args(c, f, o.out, o.lse, true, at::kBFloat16));
  const auto o2 = gpu_->sparse_forward(f);
  QVERIFY(at::equal(o.out, o2.out));
  QVERIFY(at::equal(a.dq, b.dq));
  QVERIFY(at::equal(a.dk, b.dk));
  QVERIFY(at::equal(a.dv, b.dv));
}

// Every tuning row (stages, cache hints, list staging, register layouts) gives identical bits.
void tst_AttentionGpu::tuning_variants_agree() {
  const TiledCase c = make_case(1, 3, 18, 128, at::kBFloat16, 4.0, 0.7, true);
  const SparseForwardArgs f = forward_args(c, true, at::kBFloat16);
  qunsetenv("VIDGRAPH_ATTENTION_TUNING");
  const auto o = gpu_->sparse_forward(f);
  const auto g = gpu_->sparse_backward(backward_args(c, f, o.out, o.lse, true, at::kBFloat16));
  for (const char* row : {"1,1,0,0,0,0", "2,2,0,1,0,0", "1,2,1,1,1,1", "2,1,0,1,1,0", "1,1,1,0,0,1"}) {
    qputenv("VIDGRAPH_ATTENTION_TUNING", row);
    const auto o2 = gpu_->sparse_forward(f);
    const auto g2 = gpu_->sparse_backward(backward_args(c, f, o2.out, o2.lse, true, at::kBFloat16));
    QVERIFY2(at::equal(o.out, o2.out) && at::equal(o.lse, o2.lse), row);
    QVERIFY2(at::equal(g.dq, g2.dq) && at::equal(g.dk, g2.dk) && at::equal(g.dv, g2.dv), row);
  }
  qunsetenv("VIDGRAPH_ATTENTION_TUNING");
}

void tst_AttentionGpu::select_topk_matches_aten() {
  for (const int64_t n : {7, 48, 480}) {
    // Quantised scores: many exact ties, broken by the lowest index.
    const at::Tensor scores = (at::randint(0, 9, {2, 3, n, n}, at::kFloat) * 0.25).contiguous();
    for (const int64_t topk : {int64_t(1), (n + 2) / 3, n}) {
      const auto ref = attention::select_topk_aten(scores, topk);
      const auto got = gpu_->select_topk(scores.to(at::kCUDA), topk);
      QVERIFY(at::equal(got.q2k.to(at::kCPU), ref.q2k));
      QVERIFY(at::equal(got.k2q.to(at::kCPU), ref.k2q));
      QVERIFY(at::equal(got.k2q_count.to(at::kCPU), ref.k2q_count));
    }
  }
}

void tst_AttentionGpu::methods_match_cpu_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<int>("dim");
  QTest::addColumn<int>("t");
  QTest::addColumn<int>("h");
  QTest::addColumn<int>("w");
  QTest::newRow("full_d128_5x6x7") << "full" << 128 << 5 << 6 << 7;
  QTest::newRow("full_d64_1x1x150") << "full" << 64 << 1 << 1 << 150;
  QTest::newRow("vsa_d128_5x6x7") << "vsa" << 128 << 5 << 6 << 7;
  QTest::newRow("vsa_d64_6x9x10") << "vsa" << 64 << 6 << 9 << 10;
  QTest::newRow("sla_star_d128_5x6x7") << "sla_star" << 128 << 5 << 6 << 7;
  QTest::newRow("sla_star_d64_7x5x9") << "sla_star" << 64 << 7 << 5 << 9;
}

void tst_AttentionGpu::methods_match_cpu() {
  QFETCH(QString, method);
  QFETCH(int, dim);
  QFETCH(int, t);
  QFETCH(int, h);
  QFETCH(int, w);
  attention::AttentionPluginBackend backend;
  const int64_t b = 2, heads = 3, s = int64_t(t) * h * w;
  const at::ScalarType dt = at::kBFloat16;
  // bf16-representable values shared by both devices: [B, S, H, D]
  auto rnd = [&](std::initializer_list<int64_t> shape, double sc) { return (at::randn(shape) * sc).to(dt).to(at::kFloat); };
  const at::Tensor q = rnd({b, s, heads, dim}, 2.0), k = rnd({b, s, heads, dim}, 2.0), v = rnd({b, s, heads, dim}, 1.0);
  const at::Tensor gate = rnd({b, s, heads, dim}, 1.0), dout = rnd({b, s, heads, dim}, 1.0);
  const at::Tensor wl = rnd({dim, dim}, 0.1), bl = rnd({dim}, 0.1);
  auto run = [&](bool gpu) {
    auto place = [&](const at::Tensor& x) {
      return (gpu ? x.to(at::kCUDA).to(dt) : x.clone()).set_requires_grad(true);
    };
    plugin::AttentionCall call;
    call.q = place(q);
    call.k = place(k);
    call.v = place(v);
    call.grid = {t, h, w};
    call.method = method.toStdString();
    if (method != "full") {
      call.params["sparsity"] = 0.6;
      call.extras.gate = place(gate);
    }
    if (method == "sla_star") {
      call.extras.proj_l_weight = place(wl);
      call.extras.proj_l_bias = place(bl);
    }
    const at::Tensor out = backend.forward(call);
    std::vector<at::Tensor> inputs{call.q, call.k, call.v};
    if (call.extras.gate.defined()) inputs.push_back(call.extras.gate);
    const auto grads = torch::autograd::grad({out}, inputs, {gpu ? dout.to(at::kCUDA).to(dt) : dout});
    std::vector<at::Tensor> all{out};
    all.insert(all.end(), grads.begin(), grads.end());
    return all;
  };
  const auto ref = run(false);
  const auto got = run(true);
  QCOMPARE(got.size(), ref.size());
  const char* names[] = {"out", "dq", "dk", "dv", "dgate"};
  for (size_t i = 0; i < ref.size(); ++i) {
    QVERIFY(all_finite(got[i]));
    const double e = rel_l2(got[i], ref[i]);
    qInfo("rel-L2 %s %.3g", names[i], e);
    QVERIFY2(e < (i == 0 ? 2e-2 : 5e-2), qPrintable(QString("%1 rel-L2 %2").arg(names[i]).arg(e)));
  }
  backend.shutdown();
}

void tst_AttentionGpu::bad_input_is_an_error_data() {
  QTest::addColumn<QString>("method");
  QTest::addColumn<int>("dim");
  QTest::addColumn<bool>("fp32");
  QTest::addColumn<int>("tile");
  QTest::newRow("head_dim_96") << "vsa" << 96 << false << 4;
  QTest::newRow("fp32_on_gpu") << "full" << 64 << true << 4;
  QTest::newRow("tile_volume_8") << "vsa" << 64 << false << 2;
}

void tst_AttentionGpu::bad_input_is_an_error() {
  QFETCH(QString, method);
  QFETCH(int, dim);
  QFETCH(bool, fp32);
  QFETCH(int, tile);
  attention::AttentionPluginBackend backend;
  plugin::AttentionCall call;
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(fp32 ? at::kFloat : at::kBFloat16);
  call.q = at::randn({1, 96, 2, dim}, opts);
  call.k = at::randn({1, 96, 2, dim}, opts);
  call.v = at::randn({1, 96, 2, dim}, opts);
  call.grid = {2, 6, 8};
  call.method = method.toStdString();
  if (method == "vsa") call.params["tile"] = std::vector<int64_t>{tile, tile, tile};
  bool threw = false;
  try {
    backend.forward(call);
  } catch (const std::exception& e) {
    threw = true;
    QVERIFY2(QString(e.what()).contains("GPU kernels"), e.what());
  }
  QVERIFY(threw);
  backend.shutdown();
}

QTEST_GUILESS_MAIN(tst_AttentionGpu)
#include "tst_attention_gpu.moc"
