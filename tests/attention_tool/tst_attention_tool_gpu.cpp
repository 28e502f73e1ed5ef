// vidgraph-attention on the GPU, as a process with a time limit: `run --device cuda` of each method
// against the float64 CPU reference (forward and gradients), and `bench --device cuda` of each
// method on a small grid. Guards the defect where the tool loaded the plugin twice, unloaded the
// first copy and then hung forever at its first kernel launch. Skips without a GPU.
#include "process_run.h"
#include "tool_case.h"

#include <ATen/Context.h>

#include <QtCore/QJsonArray>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using vidgraph::model_io::SafetensorsFile;
using vidgraph::model_io::save_safetensors;

namespace {

const QString kTool = QStringLiteral(VIDGRAPH_BINARY_DIR "/bin/vidgraph-attention");
constexpr int kTimeoutMs = 180000;  // a hang is the defect this suite guards against

double rel_l2(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  return ((g - w).norm() / w.norm()).item<double>();
}

test_common::ProcessOutcome run_tool(const QStringList& args) {
  auto r = test_common::run_process(kTool, args, kTimeoutMs);
  if (r.exit_code == -1 && r.err.contains(QStringLiteral("did not finish")))
    r.err += QStringLiteral(" (the GPU launch hung: is the plugin's library still mapped?)");
  return r;
}

}  // namespace

class tst_attention_tool_gpu : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() {
    if (!at::hasCUDA()) QSKIP("no GPU on this machine");
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(kTool), "vidgraph-attention is not built");
  }

  void run_matches_the_cpu_reference_data() {
    QTest::addColumn<QString>("method");
    QTest::newRow("full") << "full";
    QTest::newRow("vsa") << "vsa";
    QTest::newRow("sla_star") << "sla_star";
  }
  void run_matches_the_cpu_reference() {
    QFETCH(QString, method);
    const std::array<int64_t, 3> grid{5, 8, 10};  // ragged tiles: 2 x 2 x 3 of them
    const double sparsity = 0.5;
    at::manual_seed(11);
    const tool_case::ToolCase c = tool_case::make(method.toStdString(), sparsity, grid, 1, 2, 64, 1.0 / 8);
    const QString in = dir_.filePath(QStringLiteral("in_%1.safetensors").arg(method));
    const QString out = dir_.filePath(QStringLiteral("out_%1.safetensors").arg(method));
    save_safetensors(in.toStdString(), c.inputs);
    QStringList args{QStringLiteral("run"), QStringLiteral("-i"), in, QStringLiteral("-o"), out,
                     QStringLiteral("--method"), method, QStringLiteral("--grid"), QStringLiteral("5,8,10"),
                     QStringLiteral("--device"), QStringLiteral("cuda"), QStringLiteral("--dtype"),
                     QStringLiteral("bfloat16"), QStringLiteral("--backward")};
    if (method != "full") args << QStringLiteral("--sparsity") << QString::number(sparsity);
    const auto r = run_tool(args);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto file = SafetensorsFile::open(out.toStdString());
    const double fwd = rel_l2(file.load("o"), c.expect);
    QVERIFY2(fwd < 2e-2, qPrintable(QStringLiteral("o: rel-L2 %1").arg(fwd)));
    for (size_t i = 0; i < c.grads.size(); ++i) {
      const std::string& name = tool_case::grad_names()[i];
      const double err = rel_l2(file.load(name), c.grads[i]);
      QVERIFY2(err < 5e-2, qPrintable(QStringLiteral("%1: rel-L2 %2").arg(QString::fromStdString(name)).arg(err)));
    }
  }

  void bench_times_every_method() {
    const QString json = dir_.filePath(QStringLiteral("bench.json"));
    const auto r = run_tool({QStringLiteral("bench"), QStringLiteral("--device"), QStringLiteral("cuda"),
                             QStringLiteral("--grid"), QStringLiteral("4,8,8"), QStringLiteral("--heads"),
                             QStringLiteral("2"), QStringLiteral("--sparsity"), QStringLiteral("0.5"),
                             QStringLiteral("--warmup"), QStringLiteral("1"), QStringLiteral("--repeats"),
                             QStringLiteral("2"), QStringLiteral("--out"), json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray shapes = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("shapes")).toArray();
    QCOMPARE(shapes.size(), 1);
    QStringList timed;
    for (const auto& m : shapes[0].toObject().value(QStringLiteral("methods")).toArray()) {
      const QJsonObject o = m.toObject();
      QVERIFY2(o.value(QStringLiteral("fwd_ms")).toDouble() > 0, qPrintable(QJsonDocument(o).toJson()));
      timed << o.value(QStringLiteral("method")).toString();
    }
    for (const char* method : {"full", "vsa", "sla_star"})
      QVERIFY2(timed.contains(QLatin1String(method)), qPrintable(timed.join(QLatin1Char(' '))));
  }
};

QTEST_GUILESS_MAIN(tst_attention_tool_gpu)
#include "tst_attention_tool_gpu.moc"
