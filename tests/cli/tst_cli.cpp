// CLI suite: vidgraph-run-test as a child process (same sources as vidgraph-run, test node types).
// Exit codes, --set parsing and its errors, --json-events line by line, validate on good and bad
// files, nodes [--json], Ctrl-C (cancel → 130), output folder, overwrite, path rules.
#include <QtCore/QDir>
#include <QtCore/QElapsedTimer>
#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <signal.h>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

struct Output {
  int code = -1;
  QString out;
  QString err;
};

QString flow(const char* name) { return QStringLiteral(VIDGRAPH_SOURCE_DIR "/tests/cli/data/") + name; }

Output run_tool(const QStringList& args, const QString& cwd = {}) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(QStringLiteral(VIDGRAPH_RUN_TEST), args);
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    return Output{-2, {}, QStringLiteral("timed out")};
  }
  return Output{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
                QString::fromUtf8(p.readAllStandardError())};
}

std::vector<json> json_lines(const QString& text) {
  std::vector<json> out;
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) out.push_back(json::parse(line.toStdString()));
  return out;
}

}  // namespace

class tst_Cli : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void exitCodes_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("fragment");  // in stdout + stderr
    QTest::newRow("version") << QStringList{"--version"} << 0 << "vidgraph-run-test 0.1.0";
    QTest::newRow("help documents exit codes") << QStringList{"--help"} << 0 << "130  cancelled";
    QTest::newRow("run help") << QStringList{"run", "--help"} << 0 << "--json-events";
    QTest::newRow("no command") << QStringList{} << 2 << "choose a command";
    QTest::newRow("unknown command") << QStringList{"fly"} << 2 << "--help";
    QTest::newRow("unknown option") << QStringList{"run", flow("good.vgflow"), "--bogus"} << 2 << "--bogus";
    QTest::newRow("run without a file") << QStringList{"run"} << 2 << "flow";
    QTest::newRow("good run") << QStringList{"run", flow("good.vgflow"), "--output-dir", "OUT"} << 0 << "succeeded";
    QTest::newRow("missing file") << QStringList{"run", "/no/such/flow.vgflow"} << 2 << "does not exist";
    QTest::newRow("truncated file") << QStringList{"run", flow("truncated.vgflow")} << 2 << "not valid JSON";
    QTest::newRow("invalid workflow") << QStringList{"run", flow("invalid.vgflow")} << 2 << "node 'm': unknown node type";
    QTest::newRow("node fails") << QStringList{"run", flow("fail.vgflow")} << 3 << "node 'bad': model file is corrupt";
    QTest::newRow("target skips the failing node") << QStringList{"run", flow("fail.vgflow"), "--target", "a"} << 0
                                                   << "succeeded";
    QTest::newRow("unknown target") << QStringList{"run", flow("fail.vgflow"), "--target", "zz"} << 2 << "no node 'zz'";
    QTest::newRow("validate good") << QStringList{"validate", flow("good.vgflow")} << 0 << "valid (4 nodes)";
    QTest::newRow("validate bad") << QStringList{"validate", flow("invalid.vgflow")} << 2 << "outside [-100, 100]";
    QTest::newRow("validate truncated") << QStringList{"validate", flow("truncated.vgflow")} << 2 << "not valid JSON";
    QTest::newRow("nodes") << QStringList{"nodes"} << 0 << "Scale (v1)";
  }
  void exitCodes() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, fragment);
    args.replaceInStrings(QStringLiteral("OUT"), tmp_.filePath("out_exit"));
    const Output o = run_tool(args);
    QVERIFY2(o.code == code, qPrintable(QStringLiteral("exit %1\n%2\n%3").arg(o.code).arg(o.out, o.err)));
    QVERIFY2((o.out + o.err).contains(fragment), qPrintable(o.out + o.err));
  }

  void setOverrides_data() {
    QTest::addColumn<QString>("set");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("valid") << "s.factor=4" << 0 << "";
    QTest::newRow("valid int") << "slow.steps=3" << 0 << "";
    QTest::newRow("missing =") << "s.factor" << 2 << "NODE.PARAM=VALUE";
    QTest::newRow("missing node") << "factor=2" << 2 << "NODE.PARAM=VALUE";
    QTest::newRow("unknown node") << "q.factor=2" << 2 << "no node 'q'";
    QTest::newRow("unknown param") << "s.speed=2" << 2 << "Scale has no param 'speed'";
    QTest::newRow("not a number") << "s.factor=fast" << 2 << "takes a number";
    QTest::newRow("out of range") << "s.factor=1000" << 2 << "outside [-100, 100]";
    QTest::newRow("float into int") << "slow.steps=2.5" << 2 << "takes an integer";
  }
  void setOverrides() {
    QFETCH(QString, set);
    QFETCH(int, code);
    QFETCH(QString, fragment);
    const Output o = run_tool({"run", flow("good.vgflow"), "--set", set, "--json-events", "--output-dir", tmp_.filePath("o")});
    QVERIFY2(o.code == code, qPrintable(o.out + o.err));
    if (!fragment.isEmpty()) QVERIFY2(o.err.contains(fragment), qPrintable(o.err));
    // Every stdout line is JSON even on errors.
    for (const json& j : json_lines(o.out)) QVERIFY(j.contains("event"));
  }
  void setChangesTheRun() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--set", "s.factor=4", "--set", "slow.steps=2",
                               "--json-events", "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.code, 0);
    int progress = 0;
    for (const json& j : json_lines(o.out)) {
      if (j["event"] == "node_progress") {
        ++progress;
        QCOMPARE(j["max"], json(2));
      }
    }
    QCOMPARE(progress, 2);
  }

  void jsonEventsParseLineByLine() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--json-events", "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.code, 0);
    const auto lines = json_lines(o.out);
    QVERIFY(lines.size() > 10);
    QCOMPARE(lines.front()["event"], json("run_started"));
    QCOMPARE(lines.front()["nodes"], json(4));
    QCOMPARE(lines[lines.size() - 2]["event"], json("run_finished"));
    QCOMPARE(lines[lines.size() - 2]["status"], json("succeeded"));
    const json& summary = lines.back();
    QCOMPARE(summary["event"], json("summary"));
    QCOMPARE(summary["exit_code"], json(0));
    QCOMPARE(summary["nodes"].size(), std::size_t(4));
    bool saw_log = false, saw_progress = false;
    for (const json& j : lines) {
      QVERIFY(j["run_id"].is_number());
      saw_log = saw_log || (j["event"] == "log" && j["node"] == "sink");
      saw_progress = saw_progress || (j["event"] == "node_progress" && j["value"].is_number() && j["max"] == 20);
    }
    QVERIFY(saw_log);
    QVERIFY(saw_progress);
    // A failing run: the summary names the node, the exit code is 3.
    const Output f = run_tool({"run", flow("fail.vgflow"), "--json-events"}, tmp_.path());
    QCOMPARE(f.code, 3);
    const json fs = json_lines(f.out).back();
    QCOMPARE(fs["status"], json("failed"));
    QCOMPARE(fs["errors"][0]["node"], json("bad"));
    QCOMPARE(fs["exit_code"], json(3));
    // A file that does not load: one error line.
    const Output bad = run_tool({"run", flow("truncated.vgflow"), "--json-events"});
    QCOMPARE(bad.code, 2);
    QCOMPARE(json_lines(bad.out).back()["event"], json("error"));
  }

  void plainOutputWhenNotATerminal() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.code, 0);
    QVERIFY(o.out.contains("node slow (Slow): started"));
    QVERIFY(o.out.contains("node slow: 20/20"));
    QVERIFY(!o.out.contains("\033["));  // no terminal control codes in a pipe
    QVERIFY(o.out.contains("Summary: succeeded"));
    QVERIFY(o.out.contains(QRegularExpression("sink\\s+Sink\\s+finished")));
  }

  void validateJson() {
    const Output good = run_tool({"validate", flow("good.vgflow"), "--json"});
    QCOMPARE(good.code, 0);
    QCOMPARE(json::parse(good.out.toStdString())["valid"], json(true));
    const Output bad = run_tool({"validate", flow("invalid.vgflow"), "--json"});
    QCOMPARE(bad.code, 2);
    const json j = json::parse(bad.out.toStdString());
    QCOMPARE(j["valid"], json(false));
    QCOMPARE(j["errors"].size(), std::size_t(3));  // s: input missing + factor out of range; m: unknown type
    QCOMPARE(j["errors"][0]["node"], json("s"));
    QCOMPARE(j["errors"][1]["node"], json("s"));
    QCOMPARE(j["errors"][2]["node"], json("m"));
  }

  void nodesJsonListsEveryType() {
    const Output o = run_tool({"nodes", "--json"});
    QCOMPARE(o.code, 0);
    const json j = json::parse(o.out.toStdString());
    QCOMPARE(j["node_types"].size(), std::size_t(11));
    bool found = false;
    for (const json& t : j["node_types"]) {
      if (t["name"] != "Slow") continue;
      found = true;
      QCOMPARE(t["params"][0]["name"], json("steps"));
      QCOMPARE(t["params"][0]["kind"], json("int"));
      QCOMPARE(t["inputs"][0]["optional"], json(true));
    }
    QVERIFY(found);
  }

  void ctrlCCancels() {
    QProcess p;
    p.start(QStringLiteral(VIDGRAPH_RUN_TEST), {"run", flow("slow.vgflow"), "--json-events"});
    QVERIFY(p.waitForStarted());
    QString seen;
    QElapsedTimer timer;
    timer.start();
    while (!seen.contains("node_progress") && timer.elapsed() < 20000) {
      p.waitForReadyRead(200);
      seen += QString::fromUtf8(p.readAllStandardOutput());
    }
    QVERIFY2(seen.contains("node_progress"), qPrintable(seen));
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 130);
    const auto lines = json_lines(seen + QString::fromUtf8(p.readAllStandardOutput()));
    QCOMPARE(lines.back()["status"], json("cancelled"));
    bool cancelled_node = false;
    for (const json& j : lines) cancelled_node = cancelled_node || (j["event"] == "node_cancelled" && j["node"] == "slow");
    QVERIFY(cancelled_node);
  }
  void secondCtrlCExitsAtOnce() {
    QProcess p;
    // 1 s per step: the first Ctrl-C is only honoured at the next step.
    p.start(QStringLiteral(VIDGRAPH_RUN_TEST), {"run", flow("slow.vgflow"), "--set", "slow.step_ms=1000", "--json-events"});
    QVERIFY(p.waitForStarted());
    QString seen;
    QElapsedTimer timer;
    timer.start();
    while (!seen.contains("node_started") && timer.elapsed() < 20000) {
      p.waitForReadyRead(200);
      seen += QString::fromUtf8(p.readAllStandardOutput());
    }
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QTest::qWait(50);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QElapsedTimer exit_timer;
    exit_timer.start();
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 130);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("exiting now"));
  }

  void outputDirOverwriteAndPaths() {
    const QString out = tmp_.filePath("written");
    const Output first = run_tool({"run", flow("write.vgflow"), "--output-dir", out});
    QCOMPARE(first.code, 0);
    QFile f(out + "/hello.txt");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("hello"));
    f.close();
    const Output again = run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.text=bye"});
    QCOMPARE(again.code, 3);
    QVERIFY(again.err.contains("--overwrite"));
    const Output forced = run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.text=bye", "--overwrite"});
    QCOMPARE(forced.code, 0);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("bye"));
    f.close();
    // {resources}/ and workflow-relative paths.
    const QString res = tmp_.filePath("res");
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--resources", res, "--set", "w.file={resources}/r.txt"}).code, 0);
    QVERIFY(QFile::exists(res + "/r.txt"));
    QDir().mkpath(tmp_.filePath("flows"));
    QVERIFY(QFile::copy(flow("write.vgflow"), tmp_.filePath("flows/w.vgflow")));
    QCOMPARE(run_tool({"run", tmp_.filePath("flows/w.vgflow"), "--set", "w.file=rel/x.txt"}, QDir::rootPath()).code, 0);
    QVERIFY(QFile::exists(tmp_.filePath("flows/rel/x.txt")));
    // An output folder that cannot be made is an argument error.
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--output-dir", flow("write.vgflow") + "/sub"}).code, 2);
  }
};

QTEST_GUILESS_MAIN(tst_Cli)
#include "tst_cli.moc"
