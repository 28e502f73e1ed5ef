// The attention plugin's CPU reference against dense float64 references: full, VSA (fine branch,
// gate, selection, tiling), SLA* (linear branch, proj_l), gradients (dense autograd and finite
// differences) and the errors for bad input; the DevicePath seam (dense form of `full`, staging hooks)
// through test-only CPU paths.
#include "error_of.h"
#include "prepared_call.h"
#include "attention_reference.h"
#include "attention_test_paths.h"
#include "plugins/attention/attention_methods.h"
#include "plugins/attention/attention_plugin.h"
#include "plugins/attention/cpu_path.h"
#include "plugins/attention/tile_layout.h"
#include "plugins/attention/tile_selection.h"

#include <ATen/Context.h>
#include <ATen/TensorIndexing.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/autograd/autograd.h>

#include <QtTest/QtTest>

#include <limits>
#include <numeric>

using namespace vidgraph;
namespace ref = attention_reference;
using Grid = std::array<int64_t, 3>;

Q_DECLARE_METATYPE(Grid)

namespace {

at::Tensor rnd(at::IntArrayRef shape, double scale = 1.0) {
  return at::randn(shape, at::TensorOptions().dtype(at::kDouble)) * scale;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// A call as these tests write it: tensors with the method, params and grid to prepare them with.
struct TestCall {
  at::Tensor q, k, v;
  plugin::TokenGrid grid;
  std::string method;
  plugin::ParamMap params;
  plugin::AttentionExtras extras;
};

TestCall make_call(const std::string& method, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const Grid& g) {
  TestCall c;
  c.method = method;
  c.q = q;
  c.k = k;
  c.v = v;
  c.grid = {g[0], g[1], g[2]};
  return c;
}

// The call through the only door: prepared for its tensors (a refusal throws the backend's sentence).
plugin::AttentionCall prepared_call(plugin::AttentionBackend& backend, const TestCall& c) {
  plugin::AttentionCall call;
  call.q = c.q;
  call.k = c.k;
  call.v = c.v;
  call.extras = c.extras;
  test_common::prepare_call(backend, call, c.method, c.params, c.grid);
  return call;
}

// Gradients of sum(out * weight) with respect to `inputs`.
std::vector<at::Tensor> grads_of(const at::Tensor& out, const at::Tensor& weight,
                                 const std::vector<at::Tensor>& inputs) {
  return torch::autograd::grad({(out * weight).sum()}, inputs);
}

}  // namespace

class tst_attention : public QObject {
  Q_OBJECT

 private:
  attention::AttentionPluginBackend backend_;
  at::Tensor forward(const TestCall& c) { return backend_.forward(prepared_call(backend_, c)); }
  plugin::AttentionResult forward_with_stats(const TestCall& c) {
    return backend_.forward_with_stats(prepared_call(backend_, c));
  }

 private Q_SLOTS:
  void initTestCase() { at::manual_seed(1234); }

  void full_matches_textbook_data() {
    QTest::addColumn<int>("b");
    QTest::addColumn<Grid>("grid");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("d");
    QTest::newRow("one block") << 1 << Grid{1, 4, 8} << 2 << 16;
    QTest::newRow("ragged 210 tokens, D64") << 2 << Grid{5, 6, 7} << 2 << 64;
    QTest::newRow("ragged, D128") << 1 << Grid{3, 5, 9} << 3 << 128;
  }
  void full_matches_textbook() {
    QFETCH(int, b);
    QFETCH(Grid, grid);
    QFETCH(int, h);
    QFETCH(int, d);
    const int64_t s = grid[0] * grid[1] * grid[2];
    const at::Tensor q = rnd({b, s, h, d}), k = rnd({b, s, h, d}), v = rnd({b, s, h, d});
    const at::Tensor out = forward(make_call("full", q, k, v, grid));
    QCOMPARE(out.sizes().vec(), q.sizes().vec());
    QVERIFY(max_abs_diff(out, ref::dense_attention(q, k, v)) < 1e-12);
  }

  void vsa_fine_matches_masked_dense_data() {
    QTest::addColumn<int>("b");
    QTest::addColumn<Grid>("grid");
    QTest::addColumn<int>("d");
    QTest::addColumn<double>("sparsity");
    QTest::newRow("(5,6,7) D64 s0.875") << 2 << Grid{5, 6, 7} << 64 << 0.875;
    QTest::newRow("(5,6,7) D128 s0.5") << 2 << Grid{5, 6, 7} << 128 << 0.5;
    QTest::newRow("(5,6,7) D64 s0.9") << 1 << Grid{5, 6, 7} << 64 << 0.9;
    QTest::newRow("(8,9,10) D64 s0.75") << 2 << Grid{8, 9, 10} << 64 << 0.75;
    QTest::newRow("(4,4,4) single tile") << 2 << Grid{4, 4, 4} << 64 << 0.875;
    QTest::newRow("(2,3,13) D128 s0.3") << 1 << Grid{2, 3, 13} << 128 << 0.3;
  }
  void vsa_fine_matches_masked_dense() {
    QFETCH(int, b);
    QFETCH(Grid, grid);
    QFETCH(int, d);
    QFETCH(double, sparsity);
    const int64_t s = grid[0] * grid[1] * grid[2], h = 2;
    const at::Tensor q = rnd({b, s, h, d}), k = rnd({b, s, h, d}), v = rnd({b, s, h, d});
    auto call = make_call("vsa", q, k, v, grid);
    call.params["sparsity"] = sparsity;
    const auto result = forward_with_stats(call);
    const auto expect = ref::vsa(q, k, v, {}, grid, {4, 4, 4}, sparsity);
    QVERIFY(max_abs_diff(result.out, expect.out) < 1e-12);
    const int64_t n = ref::num_tiles(grid, {4, 4, 4});
    QCOMPARE(result.stats.topk, ref::topk_for(sparsity, n));
    QCOMPARE(result.stats.query_tiles, n);
    // The reference's block mask has exactly topk per row, and the plugin chose the same count.
    QVERIFY(expect.block_mask.sum(-1).eq(result.stats.topk).all().item<bool>());
    QVERIFY(result.stats.selected_per_query_tile.eq(result.stats.topk).all().item<bool>());
    QCOMPARE(result.stats.selected_per_kv_tile.sum().item<int64_t>(), b * h * n * result.stats.topk);
  }

  void vsa_gate_combines_coarse() {
    const Grid grid{5, 6, 7};
    const at::Tensor q = rnd({2, 210, 2, 64}), k = rnd({2, 210, 2, 64}), v = rnd({2, 210, 2, 64});
    const at::Tensor gate = rnd({2, 210, 2, 64});
    auto call = make_call("vsa", q, k, v, grid);
    call.params["sparsity"] = 0.6;
    call.extras.gate = gate;
    const auto expect = ref::vsa(q, k, v, gate, grid, {4, 4, 4}, 0.6);
    QVERIFY(max_abs_diff(forward(call), expect.out) < 1e-12);
    // A zero gate gives the fine branch alone, equal to no gate at all.
    call.extras.gate = at::zeros_like(gate);
    const at::Tensor zero_gate = forward(call);
    call.extras.gate = at::Tensor();
    QVERIFY(max_abs_diff(zero_gate, forward(call)) == 0.0);
    QVERIFY(max_abs_diff(zero_gate, expect.fine) < 1e-12);
  }

  void vsa_sparsity_zero_zero_gate_equals_full() {
    const Grid grid{5, 6, 7};
    const at::Tensor q = rnd({1, 210, 3, 64}), k = rnd({1, 210, 3, 64}), v = rnd({1, 210, 3, 64});
    auto call = make_call("vsa", q, k, v, grid);
    call.params["sparsity"] = 0.0;
    call.extras.gate = at::zeros({1, 210, 3, 64}, at::kDouble);
    const auto r = forward_with_stats(call);
    QCOMPARE(r.stats.topk, r.stats.kv_tiles);
    QCOMPARE(r.stats.density, 1.0);
    QVERIFY(max_abs_diff(r.out, forward(make_call("full", q, k, v, grid))) < 1e-12);
  }

  void topk_exact_count_and_ties() {
    // Rows of equal scores choose the lowest indices; distinct scores choose the largest.
    at::Tensor scores = at::zeros({1, 2, 3, 6}, at::kFloat);
    scores[0][1][0] = at::tensor({1.0f, 5.0f, 3.0f, 5.0f, 0.0f, 3.0f});
    scores[0][1][1] = at::tensor({2.0f, 2.0f, 9.0f, 2.0f, 2.0f, 2.0f});
    const auto sel = attention::select_topk_aten(scores, 3);
    QCOMPARE(sel.q2k.sizes().vec(), (std::vector<int64_t>{1, 2, 3, 3}));
    const auto row = [&](int h, int n) {
      const at::Tensor r = sel.q2k[0][h][n].to(at::kLong).contiguous();
      return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + 3);
    };
    QCOMPARE(row(0, 0), (std::vector<int64_t>{0, 1, 2}));
    QCOMPARE(row(1, 0), (std::vector<int64_t>{1, 2, 3}));
    QCOMPARE(row(1, 1), (std::vector<int64_t>{0, 1, 2}));
    // Inversion: KV tile 1 of head 1 was chosen by query tiles 0, 1 and 2.
    QCOMPARE(sel.k2q_count[0][1][1].item<int>(), 3);
    QCOMPARE(sel.k2q[0][1][5][0].item<int>(), -1);
    QCOMPARE(attention::topk_for_sparsity(0.875, 480), int64_t(60));
    QCOMPARE(attention::topk_for_sparsity(0.9, 480), int64_t(48));
    QCOMPARE(attention::topk_for_sparsity(0.8, 480), int64_t(96));
    QCOMPARE(attention::topk_for_sparsity(0.999, 10), int64_t(1));
    // Through the backend: constant q and k make every coarse score equal.
    const at::Tensor q = at::ones({1, 210, 1, 8}, at::kDouble), v = rnd({1, 210, 1, 8});
    auto call = make_call("vsa", q, q, v, {5, 6, 7});
    call.params["sparsity"] = 0.75;
    const auto r = forward_with_stats(call);
    const int64_t n = r.stats.kv_tiles;
    const at::Tensor per_kv = r.stats.selected_per_kv_tile[0][0];
    for (int64_t j = 0; j < n; ++j) QCOMPARE(per_kv[j].item<int64_t>(), j < r.stats.topk ? n : int64_t(0));
  }

  void tiling_roundtrip_data() {
    QTest::addColumn<Grid>("grid");
    QTest::addColumn<Grid>("tile");
    QTest::newRow("(5,6,7) 4x4x4") << Grid{5, 6, 7} << Grid{4, 4, 4};
    QTest::newRow("(1,1,1) 4x4x4") << Grid{1, 1, 1} << Grid{4, 4, 4};
    QTest::newRow("(8,4,12) exact") << Grid{8, 4, 12} << Grid{4, 4, 4};
    QTest::newRow("(7,5,3) 2x3x4") << Grid{7, 5, 3} << Grid{2, 3, 4};
    QTest::newRow("(31,22,40) wan") << Grid{31, 22, 40} << Grid{4, 4, 4};
  }
  void tiling_roundtrip() {
    QFETCH(Grid, grid);
    QFETCH(Grid, tile);
    const int64_t s = grid[0] * grid[1] * grid[2];
    const auto layout = attention::tile_layout({grid[0], grid[1], grid[2]}, tile, at::kCPU);
    QCOMPARE(layout->num_tiles, ref::num_tiles(grid, tile));
    QCOMPARE(layout->tile_sizes.sum().item<int64_t>(), s);
    const at::Tensor x = rnd({1, s, 2, 3});
    const at::Tensor t = attention::tile_tokens(x, *layout);
    QCOMPARE(t.size(2), layout->padded_len);
    QVERIFY(at::equal(attention::untile_tokens(t, *layout), x));
    // Pads are exactly zero, real slots hold the tile's tokens.
    const at::Tensor valid = layout->key_valid.reshape({-1});
    QVERIFY(t.index({at::indexing::Slice(), at::indexing::Slice(), valid.logical_not()}).eq(0).all().item<bool>());
    const at::Tensor ids = ref::tile_ids(grid, tile);
    QVERIFY(at::equal(ids.index_select(0, layout->gather.index({valid})),
                      layout->tile_of_token.index_select(0, layout->gather.index({valid}))));
    QVERIFY(at::equal(ids, layout->tile_of_token));
    // Cached: same object for the same key.
    QCOMPARE(attention::tile_layout({grid[0], grid[1], grid[2]}, tile, at::kCPU).get(), layout.get());
  }

  // Hostile grids: products that overflow int64 (this one wraps to S = 16, which once passed the
  // shape check and made the layout write out of bounds) or pad past the int32 tile indices are
  // refused with a sentence naming the grid, before anything is allocated.
  void tile_layout_refuses_oversized_grids_data() {
    QTest::addColumn<Grid>("grid");
    QTest::addColumn<Grid>("tile");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("T*H*W wraps to 16") << Grid{1, 1096708, 269121685242884} << Grid{4, 4, 4} << "64-bit";
    QTest::newRow("tiles overflow") << Grid{INT64_MAX, INT64_MAX, 1} << Grid{1, 1, 1} << "64-bit";
    QTest::newRow("pads past int32") << Grid{1, 1, int64_t(1) << 31} << Grid{1, 1, 64} << "int32";
    QTest::newRow("large tile, tiny grid") << Grid{1, 1, int64_t(1) << 30} << Grid{64, 64, 64} << "int32";
  }
  void tile_layout_refuses_oversized_grids() {
    QFETCH(Grid, grid);
    QFETCH(Grid, tile);
    QFETCH(QString, fragment);
    QString what;
    try {
      (void)attention::tile_layout({grid[0], grid[1], grid[2]}, tile, at::kCPU);
    } catch (const c10::Error& e) {
      what = QString::fromStdString(e.what_without_backtrace());
    }
    QVERIFY2(what.contains(fragment), qPrintable(what));
    QVERIFY2(what.contains(QString::number(grid[2])), qPrintable(what));
  }

  void sla_star_zero_proj_equals_vsa() {
    const Grid grid{5, 6, 7};
    const at::Tensor q = rnd({2, 210, 2, 64}), k = rnd({2, 210, 2, 64}), v = rnd({2, 210, 2, 64});
    auto vsa = make_call("vsa", q, k, v, grid);
    auto sla = make_call("sla_star", q, k, v, grid);
    sla.extras.proj_l_weight = at::zeros({64, 64}, at::kDouble);
    sla.extras.proj_l_bias = at::zeros({64}, at::kDouble);
    QVERIFY(max_abs_diff(forward(sla), forward(vsa)) < 1e-12);
    sla.extras = {};
    QVERIFY(max_abs_diff(forward(sla), forward(vsa)) == 0.0);
    // A bias without a weight: proj_l(o_lin) is the bias alone.
    sla.extras.proj_l_bias = rnd({64});
    QVERIFY(max_abs_diff(forward(sla), forward(vsa) + sla.extras.proj_l_bias) < 1e-12);
  }

  void sla_star_linear_branch_formula_data() {
    QTest::addColumn<QString>("map");
    QTest::newRow("softmax") << "softmax";
    QTest::newRow("elu") << "elu";
    QTest::newRow("relu") << "relu";
  }
  void sla_star_linear_branch_formula() {
    QFETCH(QString, map);
    const Grid grid{3, 5, 6};
    const at::Tensor q = rnd({2, 90, 2, 16}), k = rnd({2, 90, 2, 16}), v = rnd({2, 90, 2, 16});
    const at::Tensor o_lin = ref::linear_branch(q, k, v, map.toStdString());
    QVERIFY(max_abs_diff(attention::linear_branch(q, k, v, map.toStdString()), o_lin) < 1e-12);
    const at::Tensor w = rnd({16, 16}), bias = rnd({16});
    auto call = make_call("sla_star", q, k, v, grid);
    call.params["feature_map"] = map.toStdString();
    call.params["sparsity"] = 0.5;
    call.extras.proj_l_weight = w;
    call.extras.proj_l_bias = bias;
    const at::Tensor expect = ref::vsa(q, k, v, {}, grid, {4, 4, 4}, 0.5).out + at::matmul(o_lin, w.t()) + bias;
    QVERIFY(max_abs_diff(forward(call), expect) < 1e-12);
  }

  void gradients_match_dense_data() {
    QTest::addColumn<QString>("method");
    QTest::addColumn<double>("sparsity");
    QTest::addColumn<qlonglong>("block_elements");
    QTest::newRow("full") << "full" << 0.0 << qlonglong(0);
    QTest::newRow("full, one tile per block") << "full" << 0.0 << qlonglong(1);
    QTest::newRow("vsa 0.5") << "vsa" << 0.5 << qlonglong(0);
    QTest::newRow("vsa 0.5, 3 tiles per block") << "vsa" << 0.5 << qlonglong(3 * (64 * 4 * 64 + 4 * 64 * 32 * 2));
    QTest::newRow("vsa 0.875, heads grouped") << "vsa" << 0.875 << qlonglong(8 * 3 * (64 * 64 + 64 * 32 * 2));
    QTest::newRow("sla_star 0.6") << "sla_star" << 0.6 << qlonglong(0);
  }
  void gradients_match_dense() {
    QFETCH(QString, method);
    QFETCH(double, sparsity);
    QFETCH(qlonglong, block_elements);
    attention::set_cpu_block_elements(block_elements);
    auto restore = std::shared_ptr<void>(nullptr, [](void*) { attention::set_cpu_block_elements(0); });
    const Grid grid{5, 6, 7};
    const int64_t s = 210, d = 32;
    auto leaf = [](at::Tensor t) { return t.requires_grad_(true); };
    const at::Tensor q = leaf(rnd({2, s, 2, d})), k = leaf(rnd({2, s, 2, d})), v = leaf(rnd({2, s, 2, d}));
    const at::Tensor gate = leaf(rnd({2, s, 2, d})), w = leaf(rnd({d, d}, 0.3)), bias = leaf(rnd({d}));
    const at::Tensor weight = rnd({2, s, 2, d});
    auto call = make_call(method.toStdString(), q, k, v, grid);
    std::vector<at::Tensor> inputs{q, k, v};
    at::Tensor expect;
    if (method == "full") {
      expect = ref::dense_attention(q, k, v);
    } else {
      call.params["sparsity"] = sparsity;
      call.extras.gate = gate;
      inputs.push_back(gate);
      expect = ref::vsa(q, k, v, gate, grid, {4, 4, 4}, sparsity).out;
      if (method == "sla_star") {
        call.extras.proj_l_weight = w;
        call.extras.proj_l_bias = bias;
        inputs.push_back(w);
        inputs.push_back(bias);
        expect = expect + at::matmul(ref::linear_branch(q, k, v, "softmax"), w.t()) + bias;
      }
    }
    const at::Tensor out = forward(call);
    QVERIFY(max_abs_diff(out, expect) < 1e-12);
    const auto got = grads_of(out, weight, inputs);
    const auto want = grads_of(expect, weight, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      QVERIFY2(got[i].defined(), qPrintable(QString("gradient %1 missing").arg(i)));
      const double err = max_abs_diff(got[i], want[i]);
      QVERIFY2(err < 1e-10, qPrintable(QString("gradient %1 differs by %2").arg(i).arg(err)));
    }
  }

  void gradients_match_finite_differences_data() {
    QTest::addColumn<QString>("method");
    QTest::newRow("full") << "full";
    QTest::newRow("vsa") << "vsa";
    QTest::newRow("sla_star") << "sla_star";
  }
  void gradients_match_finite_differences() {
    QFETCH(QString, method);
    const Grid grid{2, 3, 3};
    const int64_t s = 18, d = 4;
    const at::Tensor q = rnd({1, s, 2, d}), k = rnd({1, s, 2, d}), v = rnd({1, s, 2, d});
    const at::Tensor gate = rnd({1, s, 2, d}), w = rnd({d, d}), bias = rnd({d}), weight = rnd({1, s, 2, d});
    std::vector<at::Tensor> inputs{q, k, v, gate, w, bias};
    auto loss = [&](const std::vector<at::Tensor>& x) {
      auto call = make_call(method.toStdString(), x[0], x[1], x[2], grid);
      if (method != "full") {
        call.params["sparsity"] = 0.5;
        call.params["tile"] = std::vector<int64_t>{1, 2, 2};
        call.extras.gate = x[3];
      }
      if (method == "sla_star") {
        call.extras.proj_l_weight = x[4];
        call.extras.proj_l_bias = x[5];
      }
      return (forward(call) * weight).sum();
    };
    std::vector<at::Tensor> leaves;
    for (const auto& t : inputs) leaves.push_back(t.clone().requires_grad_(true));
    const auto analytic = torch::autograd::grad({loss(leaves)}, leaves, {}, c10::nullopt, false, true);
    const int used = method == "full" ? 3 : (method == "vsa" ? 4 : 6);
    const double eps = 1e-6;
    for (int i = 0; i < used; ++i) {
      const at::Tensor flat = inputs[i].view({-1});
      for (int64_t e = 0; e < flat.numel(); e += 7) {
        const double x0 = flat[e].item<double>();
        flat[e] = x0 + eps;
        const double up = loss(inputs).item<double>();
        flat[e] = x0 - eps;
        const double down = loss(inputs).item<double>();
        flat[e] = x0;
        const double numeric = (up - down) / (2 * eps);
        const double exact = analytic[i].reshape({-1})[e].item<double>();
        QVERIFY2(
            std::abs(numeric - exact) < 1e-6 * std::max(1.0, std::abs(exact)),
            qPrintable(QString("input %1 element %2: numeric %3 analytic %4").arg(i).arg(e).arg(numeric).arg(exact)));
      }
    }
  }

  void bad_input_is_a_clear_error_data() {
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("expected");
    QTest::newRow("k shape") << 0 << "k must have the shape of q";
    QTest::newRow("grid mismatch") << 1 << "has 200 tokens but q has S = 210";
    QTest::newRow("head dim") << 2 << "head dim 300 is not supported";
    QTest::newRow("NaN") << 3 << "must be finite";
    QTest::newRow("unknown method") << 4 << "unknown attention method 'flash'";
    QTest::newRow("unknown param") << 5 << "has no parameter 'topk'";
    QTest::newRow("sparsity 1") << 6 << "must be in [0, 1)";
    QTest::newRow("gate shape") << 7 << "gate must be [1, 210, 2, 8]";
    QTest::newRow("feature map") << 8 << "must be one of softmax, elu, relu";
    QTest::newRow("proj_l shape") << 9 << "proj_l weight must be [8, 8]";
    QTest::newRow("dtype mix") << 10 << "same dtype";
    QTest::newRow("no device path") << 11 << "method vsa is not available on device meta";
    QTest::newRow("rank") << 12 << "q must be [B, S, H, D]";
    QTest::newRow("tile param") << 13 << "must have 3 values";
  }
  void bad_input_is_a_clear_error() {
    QFETCH(int, row);
    QFETCH(QString, expected);
    const at::Tensor q = rnd({1, 210, 2, 8});
    auto call = make_call("vsa", q, q, q, {5, 6, 7});
    switch (row) {
      case 0:
        call.k = rnd({1, 210, 2, 4});
        break;
      case 1:
        call.grid = {5, 5, 8};
        break;
      case 2:
        call.q = call.k = call.v = rnd({1, 210, 1, 300});
        break;
      case 3:
        call.v = q.clone();
        call.v[0][3][1][2] = std::numeric_limits<double>::quiet_NaN();
        break;
      case 4:
        call.method = "flash";
        break;
      case 5:
        call.params["topk"] = int64_t(3);
        break;
      case 6:
        call.params["sparsity"] = 1.0;
        break;
      case 7:
        call.extras.gate = rnd({1, 210, 2, 3});
        break;
      case 8:
        call.method = "sla_star";
        call.params["feature_map"] = std::string("tanh");
        break;
      case 9:
        call.method = "sla_star";
        call.extras.proj_l_weight = rnd({8, 4});
        break;
      case 10:
        call.k = q.to(at::kFloat);
        break;
      case 11:
        call.q = call.k = call.v = at::empty({1, 210, 2, 8}, at::TensorOptions().device(at::kMeta));
        break;
      case 12:
        call.q = call.k = call.v = rnd({210, 2, 8});
        break;
      case 13:
        call.params["tile"] = std::vector<int64_t>{4, 4};
        break;
    }
    const std::string msg = error_of([&] { forward(call); });
    QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
  }

  void float32_runs_and_is_close() {
    const Grid grid{5, 6, 7};
    const at::Tensor q = rnd({1, 210, 2, 64}), k = rnd({1, 210, 2, 64}), v = rnd({1, 210, 2, 64});
    auto call = make_call("vsa", q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), grid);
    const at::Tensor out = forward(call);
    QCOMPARE(out.scalar_type(), at::kFloat);
    QVERIFY(max_abs_diff(out, ref::vsa(q, k, v, {}, grid, {4, 4, 4}, 0.875).out) < 1e-4);
    // bfloat16 inputs are computed in fp32 and returned as bfloat16.
    auto bf = make_call("sla_star", q.to(at::kBFloat16), k.to(at::kBFloat16), v.to(at::kBFloat16), grid);
    bf.extras.gate = at::ones({1, 210, 2, 64}, at::kBFloat16);
    bf.extras.proj_l_weight = at::eye(64, at::kFloat);
    const at::Tensor out_bf = forward(bf);
    QCOMPARE(out_bf.scalar_type(), at::kBFloat16);
    const auto r =
        ref::vsa(q.to(at::kBFloat16).to(at::kDouble), k.to(at::kBFloat16).to(at::kDouble),
                 v.to(at::kBFloat16).to(at::kDouble), at::ones({1, 210, 2, 64}, at::kDouble), grid, {4, 4, 4}, 0.875);
    const at::Tensor expect =
        r.out + ref::linear_branch(q.to(at::kBFloat16).to(at::kDouble), k.to(at::kBFloat16).to(at::kDouble),
                                   v.to(at::kBFloat16).to(at::kDouble), "softmax");
    const double rel = (out_bf.to(at::kDouble) - expect).norm().item<double>() / expect.norm().item<double>();
    QVERIFY2(rel < 2e-2, qPrintable(QString("bf16 rel-L2 %1").arg(rel)));
  }

  void real_grid_is_blockwise_and_exact() {
    // The Wan2.2-5B grid (31, 22, 40) = 27,280 tokens: an S x S matrix would be 744M entries. Checked
    // on sampled query tokens against masked dense rows built from an independent selection.
    const Grid grid{31, 22, 40};
    const int64_t s = 27280, d = 16;
    const at::Tensor q = at::randn({1, s, 1, d}), k = at::randn({1, s, 1, d}), v = at::randn({1, s, 1, d});
    auto call = make_call("vsa", q, k, v, grid);
    call.params["sparsity"] = 0.95;
    const auto r = forward_with_stats(call);
    QCOMPARE(r.stats.kv_tiles, int64_t(480));
    const int64_t topk = ref::topk_for(0.95, 480);  // 25: ceil of 24.000000000000021, as in FastVideo
    QCOMPARE(r.stats.topk, topk);
    // Independent selection: tile means by index_add in float64, stable descending order.
    const at::Tensor ids = ref::tile_ids(grid, {4, 4, 4});
    const auto means = [&](const at::Tensor& x) {
      const at::Tensor x2 = x.to(at::kDouble).view({s, d});
      return at::zeros({480, d}, at::kDouble).index_add_(0, ids, x2) /
             at::zeros({480}, at::kDouble).index_add_(0, ids, at::ones({s}, at::kDouble)).unsqueeze(1);
    };
    const at::Tensor scores = at::matmul(means(q), means(k).t());  // [N, N] (the scale does not change order)
    for (int64_t token : {0L, 1L, 777L, 5000L, 13579L, 27279L}) {
      const int64_t tile = ids[token].item<int64_t>();
      const at::Tensor row = scores[tile].contiguous();
      std::vector<int64_t> order(480);
      std::iota(order.begin(), order.end(), 0);
      const double* p = row.data_ptr<double>();
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      at::Tensor allowed = at::zeros({480}, at::kBool);
      for (int64_t i = 0; i < topk; ++i) allowed[order[i]] = true;
      const at::Tensor keys = allowed.index_select(0, ids);  // [S]
      const at::Tensor logits = at::matmul(k.to(at::kDouble).view({s, d}), q.to(at::kDouble).view({s, d})[token]) / 4.0;
      const at::Tensor w =
          at::softmax(logits.masked_fill(keys.logical_not(), -std::numeric_limits<double>::infinity()), 0);
      const at::Tensor expect = at::matmul(w, v.to(at::kDouble).view({s, d}));
      QVERIFY2(max_abs_diff(r.out[0][token][0], expect) < 1e-4, qPrintable(QString("token %1").arg(token)));
    }
  }

  // `full` in the dense form (the GPU path's): the callers' strided [B, S, H, D] tensors reach the path
  // uncopied as [B, H, S, D] views, S not a multiple of 64; out, gradients and stats equal the tiled form.
  void full_dense_form_matches_tiled() {
    const Grid grid{1, 1, 150};
    const int64_t b = 2, s = 150, h = 3, d = 32;
    const at::Tensor qkv = rnd({b, s, 3, h, d});  // one fused projection: q, k, v are strided slices
    const at::Tensor q = qkv.select(2, 0).detach().requires_grad_(true);
    const at::Tensor k = qkv.select(2, 1).detach().requires_grad_(true);
    const at::Tensor v = qkv.select(2, 2).detach().requires_grad_(true);
    const at::Tensor w = rnd({b, s, h, d});
    const auto tiled = forward_with_stats(make_call("full", q, k, v, grid));
    const auto g_tiled = grads_of(tiled.out, w, {q, k, v});
    attention_test::PathSwap<attention_test::DenseCpuPath> dense;
    const auto r = forward_with_stats(make_call("full", q, k, v, grid));
    const auto g = grads_of(r.out, w, {q, k, v});
    QCOMPARE(dense->dense_forwards, 1);
    QCOMPARE(dense->dense_backwards, 1);
    QVERIFY(dense->saw_strided_q);
    QCOMPARE(dense->q_data, static_cast<const void*>(q.data_ptr()));
    QCOMPARE(r.out.sizes().vec(), q.sizes().vec());
    QVERIFY(max_abs_diff(r.out, tiled.out) < 1e-12);
    QVERIFY(max_abs_diff(r.out, ref::dense_attention(q.detach(), k.detach(), v.detach())) < 1e-12);
    for (size_t i = 0; i < 3; ++i) QVERIFY(max_abs_diff(g[i], g_tiled[i]) < 1e-12);
    QVERIFY(!r.stats.sparse);
    QCOMPARE(r.stats.topk, int64_t(3));
    QCOMPARE(r.stats.density, 1.0);
    QVERIFY(at::equal(r.stats.selected_per_query_tile, tiled.stats.selected_per_query_tile));
    QVERIFY(at::equal(r.stats.selected_per_kv_tile, tiled.stats.selected_per_kv_tile));
    QVERIFY(at::equal(r.stats.tile_sizes, tiled.stats.tile_sizes));
  }

  // vsa and sla_star stage through the device path's hooks (what a GPU path overrides): three tilings,
  // three tile means (two without a gate), one untile (gated when a gate is given), one linear branch; defaults are
  // exact.
  void staging_hooks_are_used() {
    const Grid grid{5, 6, 7};
    const at::Tensor q = rnd({1, 210, 2, 64}), k = rnd({1, 210, 2, 64}), v = rnd({1, 210, 2, 64});
    auto call = make_call("sla_star", q, k, v, grid);
    call.extras.gate = rnd({1, 210, 2, 64});
    call.extras.proj_l_weight = rnd({64, 64}, 0.1);
    call.extras.proj_l_bias = rnd({64}, 0.1);
    const at::Tensor plain = forward(call);
    attention_test::PathSwap<attention_test::HookCountingPath> hooks;
    QVERIFY(at::equal(forward(call), plain));
    QCOMPARE(hooks->tiles, 3);
    QCOMPARE(hooks->tile_means, 3);
    QCOMPARE(hooks->untiles, 1);
    QCOMPARE(hooks->gated_untiles, 1);
    QCOMPARE(hooks->linears, 1);
    call.method = "vsa";
    call.extras = {};
    forward(call);
    QCOMPARE(hooks->untiles, 2);
    QCOMPARE(hooks->gated_untiles, 1);
    QCOMPARE(hooks->tile_means, 5);  // no gate: no coarse output, so no mean of v
    QCOMPARE(hooks->linears, 1);
  }

  void methods_and_defaults() {
    const auto methods = backend_.methods();
    QCOMPARE(methods.size(), size_t(3));
    const auto* vsa = plugin::find_method(methods, "vsa");
    QVERIFY(vsa != nullptr);
    const auto params = plugin::resolve_params(*vsa, {});
    QCOMPARE(plugin::param_as_double(params, "sparsity"), 0.875);
    QCOMPARE(plugin::param_as_int_list(params, "tile"), (std::vector<int64_t>{4, 4, 4}));
    const auto* sla = plugin::find_method(methods, "sla_star");
    QCOMPARE(plugin::param_as_string(plugin::resolve_params(*sla, {}), "feature_map"), std::string("softmax"));
    QVERIFY(vsa->kind == plugin::MethodKind::Sparse);
    QVERIFY(sla->kind == plugin::MethodKind::SparseLinear);
    QVERIFY(plugin::find_method(methods, "full")->kind == plugin::MethodKind::Dense);
    QCOMPARE(plugin::find_method_of_kind(methods, plugin::MethodKind::Dense)->name, std::string("full"));
  }
};

QTEST_GUILESS_MAIN(tst_attention)
#include "tst_attention.moc"
