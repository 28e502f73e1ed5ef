// The attention plugin's prepare(): refusals are errors before any call (unknown method or param,
// out-of-range values, a device without a path, a dtype or head dim the path refuses, a bad grid),
// a prepared call gives the bits of an unprepared one and takes its method and params from the
// preparation, a call whose tensors do not match the preparation is refused, and a plugin that was
// shut down prepares nothing.
#include "error_of.h"
#include "plugins/attention/attention_plugin.h"

#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <QtTest/QtTest>

#include <string>

using namespace vidgraph;

namespace {

at::Tensor rnd(at::IntArrayRef shape, at::ScalarType dtype = at::kDouble) {
  return at::randn(shape, at::TensorOptions().dtype(dtype));
}

plugin::PrepareRequest request(const std::string& method, int64_t d = 8) {
  plugin::PrepareRequest r;
  r.method = method;
  r.dtype = at::kDouble;
  r.head_dim = d;
  r.grid = {5, 6, 7};
  return r;
}

plugin::AttentionCall call_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  plugin::AttentionCall c;
  c.q = q;
  c.k = k;
  c.v = v;
  return c;
}

}  // namespace

class tst_attention_prepare : public QObject {
  Q_OBJECT

 private:
  attention::AttentionPluginBackend backend_;

 private Q_SLOTS:
  void initTestCase() { at::manual_seed(99); }

  void refusals_are_errors_data() {
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown method") << 0 << "unknown attention method 'flash'";
    QTest::newRow("unknown param") << 1 << "has no parameter 'topk'";
    QTest::newRow("sparsity 1") << 2 << "'sparsity' of method 'vsa' must be in [0, 1), got 1";
    QTest::newRow("tile of two") << 3 << "'tile' of method 'vsa' must have 3 values";
    QTest::newRow("tile of 0") << 4 << "values must be in [1, 64]";
    QTest::newRow("feature map") << 5 << "must be one of softmax, elu, relu";
    QTest::newRow("head dim 300") << 6 << "head dim 300 is not supported on the CPU";
    QTest::newRow("integer dtype") << 7 << "must be floating point";
    QTest::newRow("no device path") << 8 << "method vsa is not available on device meta";
    QTest::newRow("empty grid") << 9 << "the token grid must be positive";
    QTest::newRow("grid overflow") << 10 << "more tokens than a 64-bit count holds";
  }
  void refusals_are_errors() {
    QFETCH(int, row);
    QFETCH(QString, expected);
    plugin::PrepareRequest r = request("vsa");
    switch (row) {
      case 0: r.method = "flash"; break;
      case 1: r.params["topk"] = int64_t(3); break;
      case 2: r.params["sparsity"] = 1.0; break;
      case 3: r.params["tile"] = std::vector<int64_t>{4, 4}; break;
      case 4: r.params["tile"] = std::vector<int64_t>{0, 4, 4}; break;
      case 5:
        r.method = "sla_star";
        r.params["feature_map"] = std::string("tanh");
        break;
      case 6: r.head_dim = 300; break;
      case 7: r.dtype = at::kInt; break;
      case 8: r.device = c10::Device(c10::kMeta); break;
      case 9: r.grid = {0, 6, 7}; break;
      case 10: r.grid = {1, 1096708, 269121685242884}; break;
    }
    const plugin::PrepareResult p = backend_.prepare(r);
    QVERIFY(!p.prepared);
    QVERIFY2(p.error.find(expected.toStdString()) != std::string::npos, p.error.c_str());
  }

  // The preparation completes the params and says which extras the method reads.
  void preparation_describes_the_method() {
    for (const auto& m : backend_.methods()) {
      const plugin::PrepareResult p = backend_.prepare(request(m.name));
      QVERIFY2(p.prepared, p.error.c_str());
      QCOMPARE(p.prepared->uses_gate, m.uses_gate);
      QCOMPARE(p.prepared->uses_proj_l, m.uses_proj_l);
      QCOMPARE(p.prepared->request.params.size(), m.params.size());
    }
    QVERIFY(!plugin::find_method(backend_.methods(), "full")->uses_gate);
    QVERIFY(plugin::find_method(backend_.methods(), "vsa")->uses_gate);
    QVERIFY(plugin::find_method(backend_.methods(), "sla_star")->uses_proj_l);
  }

  // A call without a preparation is refused; one preparation serves many calls (the same bits each
  // time) and carries the method's kind from its descriptor.
  void calls_need_a_preparation_data() {
    QTest::addColumn<QString>("method");
    QTest::newRow("full") << "full";
    QTest::newRow("vsa") << "vsa";
    QTest::newRow("sla_star") << "sla_star";
  }
  void calls_need_a_preparation() {
    QFETCH(QString, method);
    const at::Tensor q = rnd({1, 210, 2, 8}), k = rnd({1, 210, 2, 8}), v = rnd({1, 210, 2, 8});
    plugin::AttentionCall c = call_of(q, k, v);
    c.extras.gate = rnd({1, 210, 2, 8});
    c.extras.proj_l_weight = rnd({8, 8});
    const std::string msg = error_of([&] { backend_.forward(c); });
    QVERIFY2(msg.find("an attention call needs a preparation") != std::string::npos, msg.c_str());

    plugin::PrepareRequest r = request(method.toStdString());
    if (method != "full") r.params = {{"sparsity", 0.5}, {"tile", std::vector<int64_t>{2, 3, 4}}};
    if (method == "sla_star") r.params["feature_map"] = std::string("elu");
    const plugin::PrepareResult p = backend_.prepare(r);
    QVERIFY2(p.prepared, p.error.c_str());
    QVERIFY(p.prepared->kind == plugin::find_method(backend_.methods(), r.method)->kind);
    c.prepared = p.prepared;
    const plugin::AttentionResult first = backend_.forward_with_stats(c);
    QVERIFY(at::equal(backend_.forward(c), first.out));
    QVERIFY(at::equal(backend_.forward_with_stats(c).out, first.out));
    if (method != "full") QVERIFY(first.stats.sparse && first.stats.density < 1.0);
  }

  void mismatching_tensors_are_refused_data() {
    QTest::addColumn<int>("row");
    QTest::addColumn<QString>("expected");
    QTest::newRow("dtype") << 0 << "q is Float on cpu with head dim 8 but the attention was prepared for Double";
    QTest::newRow("head dim") << 1 << "with head dim 16 but the attention was prepared";
    QTest::newRow("token count") << 2 << "has 210 tokens but q has S = 200";
  }
  void mismatching_tensors_are_refused() {
    QFETCH(int, row);
    QFETCH(QString, expected);
    const plugin::PrepareResult p = backend_.prepare(request("vsa"));
    QVERIFY2(p.prepared, p.error.c_str());
    const std::vector<std::vector<int64_t>> shapes{{1, 210, 2, 8}, {1, 210, 2, 16}, {1, 200, 2, 8}};
    const at::Tensor q = rnd(shapes[row], row == 0 ? at::kFloat : at::kDouble);
    plugin::AttentionCall c = call_of(q, q, q);
    c.prepared = p.prepared;
    const std::string msg = error_of([&] { backend_.forward(c); });
    QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
  }

  void shut_down_plugin_prepares_nothing() {
    attention::AttentionPluginBackend other;
    QVERIFY(other.prepare(request("full")).prepared);
    other.shutdown();
    const plugin::PrepareResult p = other.prepare(request("full"));
    QVERIFY(!p.prepared);
    QVERIFY2(p.error.find("shut down") != std::string::npos, p.error.c_str());
  }
};

QTEST_GUILESS_MAIN(tst_attention_prepare)
#include "tst_attention_prepare.moc"
