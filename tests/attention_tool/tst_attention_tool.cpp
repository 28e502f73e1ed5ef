// vidgraph-attention end to end: the test writes q, k, v (+ extras, do) to a safetensors file, runs
// the tool, and checks o and the gradients against the dense float64 references, the printed
// selection statistics, and the errors for malformed files and bad arguments.
#include "attention_reference.h"
#include "models/io/safetensors.h"
#include "tool_case.h"

#include <ATen/Context.h>
#include <ATen/ops/randn.h>

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QJsonArray>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <sys/stat.h>

using vidgraph::model_io::SafetensorsFile;
using vidgraph::model_io::save_safetensors;
namespace ref = attention_reference;

namespace {

struct ToolRun {
  int exit_code = -1;
  QByteArray out;
  QByteArray err;
};

ToolRun run_tool(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(VIDGRAPH_BINARY_DIR "/bin/vidgraph-attention"), args);
  ToolRun r;
  if (!p.waitForFinished(240000)) {
    p.kill();
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

class tst_attention_tool : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString path(const QString& name) const { return dir_.filePath(name); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(QStringLiteral(VIDGRAPH_BINARY_DIR "/bin/vidgraph-attention")), "vidgraph-attention is not built");
  }

  void round_trip_data() {
    QTest::addColumn<QString>("method");
    QTest::addColumn<double>("sparsity");
    QTest::newRow("full") << "full" << 0.0;
    QTest::newRow("vsa 0.75") << "vsa" << 0.75;
    QTest::newRow("sla_star 0.5") << "sla_star" << 0.5;
  }
  void round_trip() {
    QFETCH(QString, method); QFETCH(double, sparsity);
    const std::array<int64_t, 3> grid{5, 6, 7};
    at::manual_seed(7);
    const tool_case::ToolCase c = tool_case::make(method.toStdString(), sparsity, grid, 2, 2, 16);
    const QString in = path(QStringLiteral("in_%1.safetensors").arg(method));
    const QString out = path(QStringLiteral("out_%1.safetensors").arg(method));
    save_safetensors(in.toStdString(), c.inputs);
    QStringList args{QStringLiteral("run"), QStringLiteral("-i"), in, QStringLiteral("-o"), out, QStringLiteral("--method"),
                     method, QStringLiteral("--grid"), QStringLiteral("5,6,7"), QStringLiteral("--backward")};
    if (method != "full") args << QStringLiteral("--sparsity") << QString::number(sparsity);
    const ToolRun r = run_tool(args);
    QVERIFY2(r.exit_code == 0, r.err.constData());
    const auto file = SafetensorsFile::open(out.toStdString());
    QVERIFY(max_abs_diff(file.load("o"), c.expect) < 1e-12);
    for (size_t i = 0; i < c.grads.size(); ++i) {
      const std::string& name = tool_case::grad_names()[i];
      const double err = max_abs_diff(file.load(name), c.grads[i]);
      QVERIFY2(err < 1e-10, qPrintable(QStringLiteral("%1 differs by %2").arg(QString::fromStdString(name)).arg(err)));
    }
    QCOMPARE(file.metadata().at("method"), method.toStdString());
    // The printed statistics.
    const QJsonObject report = QJsonDocument::fromJson(r.out).object();
    const QJsonObject sel = report.value(QStringLiteral("selection")).toObject();
    QVERIFY2(!sel.isEmpty(), r.out.constData());
    const int64_t n = ref::num_tiles(grid, {4, 4, 4});
    if (method == "full") {
      QCOMPARE(sel.value(QStringLiteral("sparse")).toBool(), false);
    } else {
      QCOMPARE(sel.value(QStringLiteral("kv_tiles")).toInt(), int(n));
      QCOMPARE(sel.value(QStringLiteral("topk")).toInt(), int(ref::topk_for(sparsity, n)));
      const QJsonObject per_q = sel.value(QStringLiteral("selected_per_query_tile")).toObject();
      QCOMPARE(per_q.value(QStringLiteral("min")).toDouble(), double(ref::topk_for(sparsity, n)));
      QCOMPARE(per_q.value(QStringLiteral("max")).toDouble(), double(ref::topk_for(sparsity, n)));
      QCOMPARE(sel.value(QStringLiteral("tile_sizes")).toObject().value(QStringLiteral("ragged")).toInt(), 7);
    }
  }

  void errors_are_reported_data() {
    QTest::addColumn<QString>("case_name");
    QTest::addColumn<int>("exit_code");
    QTest::addColumn<QString>("expected");
    QTest::newRow("malformed file") << "malformed" << 1 << "invalid safetensors file";
    QTest::newRow("missing q") << "missing_q" << 1 << "has no tensor 'q'";
    QTest::newRow("grid mismatch") << "grid" << 1 << "has 30 tokens but q has S = 210";
    QTest::newRow("unknown method") << "method" << 1 << "unknown method 'flash'";
    QTest::newRow("bad param") << "param" << 1 << "must be in [0, 1)";
    QTest::newRow("unknown plugin") << "plugin" << 2 << "no plugin named 'nope'";
    QTest::newRow("unknown device") << "device" << 1 << "device";
    // T*H*W overflows int64 and wraps to 16 = S: it passed the shape check and crashed the layout.
    QTest::newRow("grid product overflows") << "overflow" << 1 << "1,1096708,269121685242884";
    QTest::newRow("sparsity nan") << "nan" << 2 << "not a finite number";
    QTest::newRow("sparsity inf") << "inf" << 2 << "not a finite number";
    QTest::newRow("negative sparsity reaches the plugin") << "negative" << 1 << "must be in [0, 1)";
    // Options made from the plugin's descriptors: --tile and --feature-map reach it too.
    QTest::newRow("tile of two values") << "tile" << 1 << "3 values";
    QTest::newRow("unknown feature map") << "feature_map" << 1 << "tanh";
  }
  void errors_are_reported() {
    QFETCH(QString, case_name); QFETCH(int, exit_code); QFETCH(QString, expected);
    const QString good = path(QStringLiteral("good.safetensors"));
    const at::Tensor x = at::randn({1, 210, 1, 8}, at::kFloat);
    save_safetensors(good.toStdString(), {{"q", x}, {"k", x}, {"v", x}});
    QString in = good, grid = QStringLiteral("5,6,7"), method = QStringLiteral("vsa");
    QStringList extra;
    if (case_name == "malformed") {
      in = path(QStringLiteral("malformed.safetensors"));
      QFile f(in);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray("\x10\x00\x00\x00\x00\x00\x00\x00{\"q\": [1, 2, 3]}", 24));
    } else if (case_name == "missing_q") {
      in = path(QStringLiteral("no_q.safetensors"));
      save_safetensors(in.toStdString(), {{"k", x}, {"v", x}});
    } else if (case_name == "grid") {
      grid = QStringLiteral("2,3,5");
    } else if (case_name == "method") {
      method = QStringLiteral("flash");
    } else if (case_name == "param") {
      extra << QStringLiteral("--sparsity") << QStringLiteral("1.5");
    } else if (case_name == "plugin") {
      extra << QStringLiteral("--plugin") << QStringLiteral("nope");
    } else if (case_name == "device") {
      extra << QStringLiteral("--device") << QStringLiteral("notadevice");
    } else if (case_name == "overflow") {
      in = path(QStringLiteral("s16.safetensors"));
      const at::Tensor y = at::randn({1, 16, 1, 8}, at::kFloat);
      save_safetensors(in.toStdString(), {{"q", y}, {"k", y}, {"v", y}});
      grid = QStringLiteral("1,1096708,269121685242884");
    } else if (case_name == "nan" || case_name == "inf") {
      extra << QStringLiteral("--sparsity") << case_name;
    } else if (case_name == "negative") {
      extra << QStringLiteral("--sparsity") << QStringLiteral("-0.5");
    } else if (case_name == "tile") {
      extra << QStringLiteral("--tile") << QStringLiteral("4,4");
    } else if (case_name == "feature_map") {
      method = QStringLiteral("sla_star");
      extra << QStringLiteral("--feature-map") << QStringLiteral("tanh");
    }
    const ToolRun r = run_tool(QStringList{QStringLiteral("run"), QStringLiteral("-i"), in, QStringLiteral("-o"),
                                           path(QStringLiteral("err_out.safetensors")), QStringLiteral("-m"), method,
                                           QStringLiteral("-g"), grid} + extra);
    QVERIFY2(r.exit_code == exit_code, qPrintable(QStringLiteral("exit %1: %2").arg(r.exit_code).arg(QString::fromUtf8(r.err))));
    QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
    QVERIFY(!QFile::exists(path(QStringLiteral("err_out.safetensors"))));
  }

  // Usage errors exit 2 with the usage on stderr, never a crash or CLI11's own exit codes.
  void usage_errors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no command") << QStringList{} << "choose a command";
    QTest::newRow("run without arguments") << QStringList{"run"} << "--input";
    QTest::newRow("run without grid") << QStringList{"run", "-i", "in", "-o", "out"} << "--grid";
    QTest::newRow("unknown option") << QStringList{"run", "-i", "in", "-o", "out", "-g", "1,1,1", "--bogus"} << "--bogus";
    QTest::newRow("unknown command") << QStringList{"fly"} << "fly";
  }
  void usage_errors() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    const ToolRun r = run_tool(args);
    QVERIFY2(r.exit_code == 2, qPrintable(QStringLiteral("exit %1: %2").arg(r.exit_code).arg(QString::fromUtf8(r.err))));
    QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
    QVERIFY2(r.err.contains("Usage") || r.err.contains("usage") || r.err.contains("OPTIONS"), r.err.constData());
  }

  // -o never replaces anything without --overwrite, and with it only a safetensors file: never a
  // folder, a FIFO or a device; the check comes before any work.
  void output_is_never_replaced_blindly() {
    const QString in = path(QStringLiteral("w_in.safetensors"));
    const at::Tensor x = at::randn({1, 210, 1, 8}, at::kFloat);
    save_safetensors(in.toStdString(), {{"q", x}, {"k", x}, {"v", x}});
    auto run_to = [&](const QString& out, bool overwrite) {
      QStringList args{QStringLiteral("run"), QStringLiteral("-i"), in, QStringLiteral("-o"), out,
                       QStringLiteral("-g"), QStringLiteral("5,6,7")};
      if (overwrite) args << QStringLiteral("--overwrite");
      return run_tool(args);
    };
    const QString out = path(QStringLiteral("w_out.safetensors"));
    QCOMPARE(run_to(out, false).exit_code, 0);
    QFile written(out);
    QVERIFY(written.open(QIODevice::ReadOnly));
    const QByteArray first = written.readAll();
    written.close();
    const ToolRun again = run_to(out, false);
    QCOMPARE(again.exit_code, 1);
    QVERIFY2(again.err.contains("already exists"), again.err.constData());
    QCOMPARE(run_to(out, true).exit_code, 0);
    QVERIFY(written.open(QIODevice::ReadOnly));
    QCOMPARE(written.readAll().size(), first.size());  // replaced by a file of the same kind
    written.close();
    QVERIFY(QDir(dir_.path()).mkpath(QStringLiteral("w_album")));
    const QString victim = path(QStringLiteral("w_album/precious.txt"));
    {
      QFile f(victim);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("precious");
    }
    const QString fifo = path(QStringLiteral("w_pipe.safetensors"));
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0644), 0);
    for (const QString& target : {path(QStringLiteral("w_album")), fifo, victim}) {
      const ToolRun r = run_to(target, true);
      QVERIFY2(r.exit_code == 1, qPrintable(target + QStringLiteral(": ") + QString::fromUtf8(r.err)));
    }
    QFile kept(victim);
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QCOMPARE(kept.readAll(), QByteArray("precious"));
    struct stat st {};
    QCOMPARE(::lstat(fifo.toLocal8Bit().constData(), &st), 0);
    QVERIFY(S_ISFIFO(st.st_mode));
  }

  void methods_and_version() {
    const ToolRun m = run_tool({QStringLiteral("methods")});
    QVERIFY2(m.exit_code == 0, m.err.constData());
    const QJsonArray methods = QJsonDocument::fromJson(m.out).object().value(QStringLiteral("methods")).toArray();
    QCOMPARE(methods.size(), 3);
    QCOMPARE(methods.at(1).toObject().value(QStringLiteral("name")).toString(), QStringLiteral("vsa"));
    const ToolRun v = run_tool({QStringLiteral("--version")});
    QVERIFY2(v.exit_code == 0, v.err.constData());
    QVERIFY2(v.out.contains("vidgraph_attention") && v.out.contains("plugin ABI"), v.out.constData());
  }
};

QTEST_GUILESS_MAIN(tst_attention_tool)
#include "tst_attention_tool.moc"
