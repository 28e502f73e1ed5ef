// GPU suite of the attention plugin (label gpu): every GPU kernel against the CPU reference.
//  - the device path's block-sparse forward (out, lse) and backward (dq, dk, dv) against CpuPath on
//    the same bf16/fp16 values (upcast to fp32 for the CPU): forward rel-L2 < 2e-2, gradients < 5e-2,
//    at input scales 1, 4, 16, ragged tiles, B > 1, head dims 64/128, sparsity 0..0.95;
//  - GPU top-k selection and list inversion equal the ATen reference exactly (ties included);
//  - backward determinism (two runs, identical bits); every tuning variant gives the same bits;
//  - full, vsa and sla_star end to end through the plugin backend (forward + autograd, gate and proj_l
//    included) on ragged grids with S not a multiple of 64 and strided q/k/v, against the same
//    backend on the CPU (full runs the dense form: no tiling, no lists);
//  - the staging hooks (row-gather tiling/untiling, tile means, gated untile, linear branch) against
//    the shared ATen defaults on the same GPU tensors, gradients included;
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

#include "prepared_call.h"
#include "plugins/attention/attention_plugin.h"
#include "plugins/attention/cpu_path.h"
#include "plugins/attention/device_path.h"
#include "plugins/attention/tile_layout.h"
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

bool all_finite(const at::Tensor& t) {
  return t.detach().to(at::kCPU).isfinite().all().item<bool>();
}

// Tiled [B, H, N*64, D] inputs of one case: fp32 values already rounded to `dtype`, pads zero.
struct TiledCase {
  at::Tensor q, k, v, dout;  // CPU fp32
  at::Tensor tile_sizes;     // int32 [N]
  at::Tensor q2k;            // int32 [B, H, N, topk] (CPU)
  at::Tensor k2q, k2q_count;
};

TiledCase make_case(int64_t b, int64_t h, int64_t n, int64_t d, at::ScalarType dtype, double scale, double sparsity,
                    bool ragged) {
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

at::Tensor dev(const at::Tensor& t, at::ScalarType dtype) {
  return t.to(at::kCUDA).to(dtype).contiguous();
}
at::Tensor dev_int(const at::Tensor& t) {
  return t.to(at::kCUDA).contiguous();
}

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
  void staging_matches_aten();
  void linear_branch_matches_aten_data();
  void linear_branch_matches_aten();
  void prepared_for_cuda_without_index();
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

#define FETCH_CASE                                               \
  QFETCH(int, batch);                                            \
  QFETCH(int, heads);                                            \
  QFETCH(int, tiles);                                            \
  QFETCH(int, dim);                                              \
  QFETCH(bool, bf16);                                            \
  QFETCH(double, scale);                                         \
  QFETCH(double, sparsity);                                      \
  QFETCH(bool, ragged);                                          \
  const at::ScalarType dtype = bf16 ? at::kBFloat16 : at::kHalf; \
  const TiledCase c = make_case(batch, heads, tiles, dim, dtype, scale, sparsity, ragged)

void tst_AttentionGpu::forward_matches_cpu() {
  FETCH_CASE;
  const SparseForwardArgs fc = forward_args(c, false, dtype), fg = forward_args(c, true, dtype);
  const auto ref = cpu_.sparse_forward(fc);
  const auto got = gpu_->sparse_forward(fg);
  QCOMPARE(got.out.scalar_type(), dtype);
  QVERIFY(all_finite(got.out));
  const double e_out = rel_l2(real_rows(got.out, c.tile_sizes), real_rows(ref.out, c.tile_sizes));
  const double e_lse =
      rel_l2(real_rows(got.lse.unsqueeze(-1), c.tile_sizes), real_rows(ref.lse.unsqueeze(-1), c.tile_sizes));
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
  const QByteArray caller = qgetenv("VIDGRAPH_ATTENTION_TUNING");
  const c10::Device device = f.q.device();
  qunsetenv("VIDGRAPH_ATTENTION_TUNING");
  gpu_->prepare(device);  // the path reads the row at prepare, not per launch
  const auto o = gpu_->sparse_forward(f);
  const auto g = gpu_->sparse_backward(backward_args(c, f, o.out, o.lse, true, at::kBFloat16));
  // The 7th and 8th fields switch the sm_90a wgmma forward and backward (ignored where they
  // cannot run): the same MMAs in the same order, so the same bits.
  for (const char* row : {"1,1,0,0,0,0,0,0", "2,2,0,1,0,0,0,0", "1,2,1,1,1,1,0,1", "2,1,0,1,1,0,1,0",
                          "1,1,1,0,0,1,1,1", "1,1,0,1,1,1,1,1", "1,1,0,0,1,1,0,1"}) {
    qputenv("VIDGRAPH_ATTENTION_TUNING", row);
    gpu_->prepare(device);
    const auto o2 = gpu_->sparse_forward(f);
    const auto g2 = gpu_->sparse_backward(backward_args(c, f, o2.out, o2.lse, true, at::kBFloat16));
    QVERIFY2(at::equal(o.out, o2.out) && at::equal(o.lse, o2.lse), row);
    QVERIFY2(at::equal(g.dq, g2.dq) && at::equal(g.dk, g2.dk) && at::equal(g.dv, g2.dv), row);
  }
  if (caller.isNull())
    qunsetenv("VIDGRAPH_ATTENTION_TUNING");
  else
    qputenv("VIDGRAPH_ATTENTION_TUNING", caller);
  gpu_->prepare(device);
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
  QTest::addColumn<bool>("strided");  // q, k, v slices of one [B, S, 3, H, D] projection
  QTest::addColumn<int>("gate_dim");  // D or 1
  QTest::addColumn<bool>("fp16");     // else bf16
  QTest::newRow("full_d128_5x6x7") << "full" << 128 << 5 << 6 << 7 << false << 0 << false;
  QTest::newRow("full_d64_1x1x150") << "full" << 64 << 1 << 1 << 150 << false << 0 << false;
  QTest::newRow("full_d128_3x5x9_strided") << "full" << 128 << 3 << 5 << 9 << true << 0 << false;
  QTest::newRow("full_d64_1x1x64_strided") << "full" << 64 << 1 << 1 << 64 << true << 0 << false;
  QTest::newRow("vsa_d128_5x6x7") << "vsa" << 128 << 5 << 6 << 7 << false << 128 << false;
  QTest::newRow("vsa_d64_6x9x10") << "vsa" << 64 << 6 << 9 << 10 << false << 64 << false;
  QTest::newRow("vsa_d64_5x6x7_strided_gate1") << "vsa" << 64 << 5 << 6 << 7 << true << 1 << false;
  QTest::newRow("sla_star_d128_5x6x7") << "sla_star" << 128 << 5 << 6 << 7 << false << 128 << false;
  QTest::newRow("sla_star_d64_7x5x9") << "sla_star" << 64 << 7 << 5 << 9 << false << 64 << false;
  QTest::newRow("sla_star_d128_5x6x7_strided") << "sla_star" << 128 << 5 << 6 << 7 << true << 128 << false;
  QTest::newRow("vsa_d128_5x6x7_fp16") << "vsa" << 128 << 5 << 6 << 7 << false << 128 << true;
  QTest::newRow("sla_star_d64_6x9x10_strided_fp16") << "sla_star" << 64 << 6 << 9 << 10 << true << 64 << true;
  QTest::newRow("full_d64_2x5x7_strided_fp16") << "full" << 64 << 2 << 5 << 7 << true << 0 << true;
}

// Through the plugin backend, forward and autograd (q, k, v, gate, proj_l weight and bias) against the
// same backend on the CPU: full runs the dense form on strided [B, S, H, D] (S not a multiple of 64),
// vsa/sla_star the GPU staging (row gathers, tile means, gated untile, linear branch).
void tst_AttentionGpu::methods_match_cpu() {
  QFETCH(QString, method);
  QFETCH(int, dim);
  QFETCH(int, t);
  QFETCH(int, h);
  QFETCH(int, w);
  QFETCH(bool, strided);
  QFETCH(int, gate_dim);
  QFETCH(bool, fp16);
  attention::AttentionPluginBackend backend;
  const int64_t b = 2, heads = 3, s = int64_t(t) * h * w;
  const at::ScalarType dt = fp16 ? at::kHalf : at::kBFloat16;
  // bf16-representable values shared by both devices: [B, S, H, D]
  auto rnd = [&](std::initializer_list<int64_t> shape, double sc) {
    return (at::randn(shape) * sc).to(dt).to(at::kFloat);
  };
  const at::Tensor qkv = rnd({b, s, 3, heads, dim}, 2.0);
  const at::Tensor v_values = rnd({b, s, heads, dim}, 1.0);
  const at::Tensor gate = rnd({b, s, heads, std::max(gate_dim, 1)}, 1.0), dout = rnd({b, s, heads, dim}, 1.0);
  const at::Tensor wl = rnd({dim, dim}, 0.1), bl = rnd({dim}, 0.1);
  auto run = [&](bool gpu) {
    auto place = [&](const at::Tensor& x) {
      return (gpu ? x.to(at::kCUDA).to(dt) : x.clone()).set_requires_grad(true);
    };
    plugin::AttentionCall call;
    std::vector<at::Tensor> inputs;
    if (strided) {
      // one leaf [B, S, 3, H, D]; q, k, v its non-contiguous slices (v's values replaced)
      at::Tensor fused = qkv.clone();
      fused.select(2, 2).copy_(v_values);
      const at::Tensor leaf = place(fused);
      call.q = leaf.select(2, 0);
      call.k = leaf.select(2, 1);
      call.v = leaf.select(2, 2);
      inputs.push_back(leaf);
    } else {
      call.q = place(qkv.select(2, 0));
      call.k = place(qkv.select(2, 1));
      call.v = place(v_values);
      inputs.insert(inputs.end(), {call.q, call.k, call.v});
    }
    plugin::ParamMap params;
    if (method != "full") {
      params["sparsity"] = 0.6;
      call.extras.gate = place(gate);
      inputs.push_back(call.extras.gate);
    }
    if (method == "sla_star") {
      call.extras.proj_l_weight = place(wl);
      call.extras.proj_l_bias = place(bl);
      inputs.insert(inputs.end(), {call.extras.proj_l_weight, call.extras.proj_l_bias});
    }
    test_common::prepare_call(backend, call, method.toStdString(), params, {t, h, w});
    const at::Tensor out = backend.forward(call);
    const auto grads = torch::autograd::grad({out}, inputs, {gpu ? dout.to(at::kCUDA).to(dt) : dout});
    std::vector<at::Tensor> all{out};
    all.insert(all.end(), grads.begin(), grads.end());
    return all;
  };
  const auto ref = run(false);
  const auto got = run(true);
  QCOMPARE(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    QVERIFY(all_finite(got[i]));
    const double e = rel_l2(got[i], ref[i]);
    qInfo("rel-L2 %s[%zu] %.3g", i == 0 ? "out" : "grad", i, e);
    QVERIFY2(e < (i == 0 ? 2e-2 : 5e-2), qPrintable(QString("output %1 rel-L2 %2").arg(i).arg(e)));
  }
  backend.shutdown();
}

// A preparation asked for "cuda" (no index, as the train bench and users write it) serves calls on
// the current GPU's tensors, which always carry an index.
void tst_AttentionGpu::prepared_for_cuda_without_index() {
  attention::AttentionPluginBackend backend;
  const at::Tensor q = at::randn({1, 4 * 4 * 8, 2, 64}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
  for (const char* method : {"full", "vsa"}) {
    plugin::PrepareRequest request;
    request.method = method;
    request.device = c10::Device("cuda");
    request.dtype = at::kBFloat16;
    request.head_dim = 64;
    request.grid = {4, 4, 8};
    const plugin::PrepareResult r = backend.prepare(request);
    QVERIFY2(r.prepared, r.error.c_str());
    plugin::AttentionCall call;
    call.q = call.k = call.v = q;
    call.prepared = r.prepared;
    const at::Tensor out = backend.forward(call);
    QCOMPARE(out.device(), q.device());
    QVERIFY(all_finite(out));
  }
  backend.shutdown();
}

// The GPU staging hooks against the shared ATen defaults on the same GPU tensors (ragged grid, B 2,
// a strided bf16 input): tiling and untiling are exact copies (values and gradients); tile means and
// the gated untile match to bf16 rounding, gradients included.
void tst_AttentionGpu::staging_matches_aten() {
  const plugin::TokenGrid grid{5, 6, 7};
  const int64_t b = 2, s = grid.size(), h = 3, d = 64;
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor x = at::randn({b, s, 2, h, d}, opts).select(2, 1).detach().requires_grad_(true);
  const auto layout = attention::tile_layout(grid, {4, 4, 4}, x.device());
  const int64_t n = layout->num_tiles, sp = layout->padded_len;
  auto grad = [](const at::Tensor& y, const at::Tensor& wy, const std::vector<at::Tensor>& in) {
    return torch::autograd::grad({(y.to(at::kFloat) * wy).sum()}, in);
  };
  // tiling: [B, S, H, D] -> [B, H, Sp, D], bit-exact, with and without the means
  const auto t_gpu = gpu_->tile(x, *layout, false), t_ref = cpu_.tile(x, *layout, false);
  QVERIFY(t_gpu.tiled.is_contiguous() && !t_gpu.mean.defined());
  QVERIFY(at::equal(t_gpu.tiled, t_ref.tiled));
  const at::Tensor wt = at::randn({b, h, sp, d}, opts.dtype(at::kFloat));
  QVERIFY(at::equal(grad(t_gpu.tiled, wt, {x})[0], grad(t_ref.tiled, wt, {x})[0]));
  // with means: fp32 [B, H, N, D] formed in the tiling pass; the gradient of both in one pass
  const auto m_gpu = gpu_->tile(x, *layout, true), m_ref = cpu_.tile(x, *layout, true);
  QVERIFY(at::equal(m_gpu.tiled, t_ref.tiled));
  QCOMPARE(m_gpu.mean.scalar_type(), at::kFloat);
  QCOMPARE(m_gpu.mean.sizes(), m_ref.mean.sizes());
  QVERIFY2(rel_l2(m_gpu.mean, m_ref.mean) < 1e-5,
           qPrintable(QString("means rel-L2 %1").arg(rel_l2(m_gpu.mean, m_ref.mean))));
  const at::Tensor wm = at::randn({b, h, n, d}, opts.dtype(at::kFloat));
  auto both = [&](const attention::TiledTokens& t) {
    return torch::autograd::grad({(t.tiled.to(at::kFloat) * wt).sum() + (t.mean * wm).sum()}, {x})[0];
  };
  const double e_both = rel_l2(both(m_gpu), both(m_ref));
  QVERIFY2(e_both < 1e-2, qPrintable(QString("tiling with means grad rel-L2 %1").arg(e_both)));
  // only the means used (the tiled tensor's gradient stays undefined)
  const at::Tensor g_mean_gpu = torch::autograd::grad({(gpu_->tile(x, *layout, true).mean * wm).sum()}, {x})[0];
  const at::Tensor g_mean_ref = torch::autograd::grad({(cpu_.tile(x, *layout, true).mean * wm).sum()}, {x})[0];
  QVERIFY2(rel_l2(g_mean_gpu, g_mean_ref) < 1e-2,
           qPrintable(QString("mean-only grad rel-L2 %1").arg(rel_l2(g_mean_gpu, g_mean_ref))));
  // untile with and without the gated coarse branch: [B, H, Sp, D] -> [B, S, H, D]
  const at::Tensor fine = at::randn({b, h, sp, d}, opts).requires_grad_(true);
  const at::Tensor coarse = at::randn({b, h, n, d}, opts.dtype(at::kFloat)).requires_grad_(true);
  const at::Tensor wo = at::randn({b, s, h, d}, opts.dtype(at::kFloat));
  QVERIFY(at::equal(gpu_->untile(fine, *layout, {}, {}), cpu_.untile(fine, *layout, {}, {})));
  for (const int64_t dg : {d, int64_t(1)}) {
    const at::Tensor gate = at::randn({b, s, h, dg}, opts).requires_grad_(true);
    const at::Tensor o_gpu = gpu_->untile(fine, *layout, coarse, gate),
                     o_ref = cpu_.untile(fine, *layout, coarse, gate);
    QCOMPARE(o_gpu.sizes(), o_ref.sizes());
    const double e_out = rel_l2(o_gpu, o_ref);
    QVERIFY2(e_out < 1e-2, qPrintable(QString("gated untile (gate dim %1) rel-L2 %2").arg(dg).arg(e_out)));
    const auto g_gpu = grad(o_gpu, wo, {fine, coarse, gate}), g_ref = grad(o_ref, wo, {fine, coarse, gate});
    for (size_t i = 0; i < 3; ++i) {
      const double e = rel_l2(g_gpu[i], g_ref[i]);
      qInfo("gated untile gate dim %lld: grad %zu rel-L2 %.3g", (long long)dg, i, e);
      QVERIFY2(e < 2e-2, qPrintable(QString("gated untile grad %1 rel-L2 %2").arg(i).arg(e)));
    }
  }
}

// The GPU linear branch (input-dtype feature maps, GEMMs on strided views, proj_l folded into the
// D x D state, the division fused into the add) against the default (fp32 copies) on the same GPU
// tensors; gradients of q, k, v, weight, bias and the output it is added to.
void tst_AttentionGpu::linear_branch_matches_aten_data() {
  QTest::addColumn<int>("batch");
  QTest::addColumn<QString>("map");
  QTest::newRow("softmax_b1") << 1 << "softmax";
  QTest::newRow("softmax_b2") << 2 << "softmax";
  QTest::newRow("elu_b1") << 1 << "elu";
}

void tst_AttentionGpu::linear_branch_matches_aten() {
  QFETCH(int, batch);
  QFETCH(QString, map);
  const int64_t s = 300, h = 3, d = 128;
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor qkv = (at::randn({batch, s, 3, h, d}, opts) * 2.0).detach().requires_grad_(true);
  const at::Tensor q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);
  const at::Tensor wl = (at::randn({d, d}, opts.dtype(at::kFloat)) * 0.1).requires_grad_(true);
  const at::Tensor bl = (at::randn({d}, opts.dtype(at::kFloat)) * 0.1).requires_grad_(true);
  const at::Tensor base = (at::randn({batch, s, h, d}, opts) * 0.1).requires_grad_(true);  // the vsa output
  const at::Tensor got = gpu_->add_linear_branch(base, q, k, v, map.toStdString(), wl, bl);
  const at::Tensor ref = cpu_.add_linear_branch(base, q, k, v, map.toStdString(), wl, bl);
  QCOMPARE(got.sizes(), ref.sizes());
  QCOMPARE(got.scalar_type(), at::kBFloat16);
  const double e = rel_l2(got, ref);
  qInfo("linear branch rel-L2 out %.3g", e);
  QVERIFY2(e < 2e-2, qPrintable(QString("out rel-L2 %1").arg(e)));
  const at::Tensor wo = at::randn(got.sizes(), opts.dtype(at::kFloat));
  const auto gg = torch::autograd::grad({(got.to(at::kFloat) * wo).sum()}, {qkv, wl, bl, base});
  const auto gr = torch::autograd::grad({(ref.to(at::kFloat) * wo).sum()}, {qkv, wl, bl, base});
  for (size_t i = 0; i < 4; ++i) {
    const double eg = rel_l2(gg[i], gr[i]);
    qInfo("linear branch grad %zu rel-L2 %.3g", i, eg);
    QVERIFY2(eg < 5e-2, qPrintable(QString("grad %1 rel-L2 %2").arg(i).arg(eg)));
  }
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
  plugin::ParamMap params;
  if (method == "vsa") params["tile"] = std::vector<int64_t>{tile, tile, tile};
  bool threw = false;
  try {
    test_common::prepare_call(backend, call, method.toStdString(), params, {2, 6, 8});
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
