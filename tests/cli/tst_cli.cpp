// CLI suite: vidgraph-run-test as a child process (same sources as vidgraph-run, test node types).
// Exit codes, --set parsing and its errors, --json-events line by line, validate on good and bad
// files, nodes [--json], models --json, Ctrl-C (cancel → 130), output folder, overwrite, path rules; run --sweep:
// option errors (exit 2, nothing written), combinations in order with a shared cache, per-run folders
// and sweep.json, stop at the first failure, Ctrl-C.
#include <QtCore/QDir>
#include <QtCore/QElapsedTimer>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <signal.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "../model_loading/model_folder_files.h"
#include "process_run.h"

using nlohmann::json;

namespace {

using Output = test_common::ProcessOutcome;

QString flow(const char* name) { return QStringLiteral(VIDGRAPH_SOURCE_DIR "/tests/cli/data/") + name; }

Output run_tool(const QStringList& args, const QString& cwd = {}) {
  return test_common::run_process(QStringLiteral(VIDGRAPH_RUN_TEST), args, 60000, cwd);
}

std::vector<json> json_lines(const QString& text) {
  std::vector<json> out;
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) out.push_back(json::parse(line.toStdString()));
  return out;
}

// Reads `p`'s stdout until a node reports progress (or 20 s pass), then sends SIGINT as Ctrl-C
// would. Returns what was read.
QString interrupt_after_progress(QProcess& p) {
  QString seen;
  QElapsedTimer timer;
  timer.start();
  while (!seen.contains("node_progress") && timer.elapsed() < 20000) {
    p.waitForReadyRead(200);
    seen += QString::fromUtf8(p.readAllStandardOutput());
  }
  if (seen.contains("node_progress")) ::kill(static_cast<pid_t>(p.processId()), SIGINT);
  return seen;
}

QString read_text(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QStringLiteral("<missing %1>").arg(path);
}

// Run `run`'s workflow from `out`'s history (`vidgraph-run history --workflow`), saved as `path`.
bool save_history_workflow(const QString& out, int run, const QString& path) {
  const Output saved = run_tool({"history", out, "--workflow", QString::number(run)});
  if (saved.exit_code != 0) {
    qWarning("history --workflow %d: %s", run, qPrintable(saved.err));
    return false;
  }
  QFile file(path);
  return file.open(QIODevice::WriteOnly) && file.write(saved.out.toUtf8()) == saved.out.toUtf8().size();
}

// Per sweep run (run_index): node id → "cached" or "started".
std::map<int, std::map<std::string, std::string>> node_outcomes(const std::vector<json>& lines) {
  std::map<int, std::map<std::string, std::string>> runs;
  for (const json& j : lines) {
    if (j["event"] == "node_cached") runs[j["run_index"].get<int>()][j["node"]] = "cached";
    if (j["event"] == "node_started") runs[j["run_index"].get<int>()][j["node"]] = "started";
  }
  return runs;
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
    QVERIFY2(o.exit_code == code, qPrintable(QStringLiteral("exit %1\n%2\n%3").arg(o.exit_code).arg(o.out, o.err)));
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
    QVERIFY2(o.exit_code == code, qPrintable(o.out + o.err));
    if (!fragment.isEmpty()) QVERIFY2(o.err.contains(fragment), qPrintable(o.err));
    // Every stdout line is JSON even on errors.
    for (const json& j : json_lines(o.out)) QVERIFY(j.contains("event"));
  }
  void setChangesTheRun() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--set", "s.factor=4", "--set", "slow.steps=2",
                               "--json-events", "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.exit_code, 0);
    int progress = 0;
    for (const json& j : json_lines(o.out)) {
      if (j["event"] == "node_progress") {
        ++progress;
        QCOMPARE(j["max"], json(2));
      }
    }
    QCOMPARE(progress, 2);
  }

  // --set names the params of the current type version and applies after the upgrade: v1's
  // "amount" became "value", and the set value is the one that runs (not the file's old amount).
  void setAppliesAfterTheUpgrade_data() {
    QTest::addColumn<QStringList>("sets");
    QTest::addColumn<QString>("logged");
    QTest::newRow("no --set: the upgraded amount") << QStringList{} << "value 7.0";
    QTest::newRow("--set on the renamed param") << QStringList{"--set", "v.value=3"} << "value 3.0";
  }
  void setAppliesAfterTheUpgrade() {
    QFETCH(QStringList, sets);
    QFETCH(QString, logged);
    const Output o = run_tool(QStringList{"run", flow("versioned.vgflow"), "--json-events", "--output-dir",
                                          tmp_.filePath("o")} + sets);
    QVERIFY2(o.exit_code == 0, qPrintable(o.out + o.err));
    QStringList messages;
    for (const json& j : json_lines(o.out)) {
      if (j["event"] == "log" && j["node"] == "v") messages << QString::fromStdString(j["message"].get<std::string>());
    }
    QVERIFY2(messages.size() == 1 && messages.front().startsWith(logged), qPrintable(messages.join('\n') + o.err));
    const Output old_name = run_tool({"validate", flow("versioned.vgflow"), "--set", "v.amount=3"});
    QCOMPARE(old_name.exit_code, 2);
    QVERIFY2(old_name.err.contains("Versioned has no param 'amount'"), qPrintable(old_name.err));
  }

  void jsonEventsParseLineByLine() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--json-events", "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.exit_code, 0);
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
    QCOMPARE(f.exit_code, 3);
    const json fs = json_lines(f.out).back();
    QCOMPARE(fs["status"], json("failed"));
    QCOMPARE(fs["errors"][0]["node"], json("bad"));
    QCOMPARE(fs["exit_code"], json(3));
    // A file that does not load: one error line.
    const Output bad = run_tool({"run", flow("truncated.vgflow"), "--json-events"});
    QCOMPARE(bad.exit_code, 2);
    QCOMPARE(json_lines(bad.out).back()["event"], json("error"));
  }

  void plainOutputWhenNotATerminal() {
    const Output o = run_tool({"run", flow("good.vgflow"), "--output-dir", tmp_.filePath("o")});
    QCOMPARE(o.exit_code, 0);
    QVERIFY(o.out.contains("node slow (Slow): started"));
    QVERIFY(o.out.contains("node slow: 20/20"));
    QVERIFY(!o.out.contains("\033["));  // no terminal control codes in a pipe
    QVERIFY(o.out.contains("Summary: succeeded"));
    QVERIFY(o.out.contains(QRegularExpression("sink\\s+Sink\\s+finished")));
  }

  // `models --json` on a ComfyUI models folder the test writes: files by kind, told by content.
  // The product runner has the command (the test runner has no model readers).
  void modelsListsComfyFolder() {
    const QString product = QFileInfo(QStringLiteral(VIDGRAPH_RUN_TEST)).absoluteDir().filePath("../bin/vidgraph-run");
    if (!QFileInfo::exists(product)) QSKIP("vidgraph-run is not built (no models layer)");
    auto run_product = [&](const QStringList& args) { return test_common::run_process(product, args, 60000); };
    const std::string models = tmp_.filePath("ComfyUI/models").toStdString();
    for (const char* sub : {"diffusion_models", "vae", "text_encoders"}) QDir().mkpath(QString::fromStdString(models + "/" + sub));
    write_sparse_safetensors(models + "/diffusion_models/wan2.2_ti2v_5B_fp16.safetensors", dit_5b_tensors());
    write_sparse_safetensors(models + "/vae/wan2.2_vae.safetensors", vae_tensors(48));
    write_sparse_safetensors(models + "/text_encoders/umt5_xxl_fp16.safetensors", umt5_tensors(true));
    QFile notes(QString::fromStdString(models + "/vae/notes.txt"));
    QVERIFY(notes.open(QIODevice::WriteOnly));
    const Output o = run_product({"models", "--json", tmp_.filePath("ComfyUI")});
    QCOMPARE(o.exit_code, 0);
    const json out = json::parse(o.out.toStdString());
    QCOMPARE(out["folders"]["vae"].size(), size_t(1));
    QCOMPARE(out["folders"]["loras"].size(), size_t(0));
    std::map<std::string, json> by_kind;
    for (const json& f : out["files"]) by_kind[f["kind"].get<std::string>()] = f;
    QCOMPARE(out["files"].size(), size_t(3));  // notes.txt is no weight file
    QCOMPARE(by_kind["diffusion_models"]["detected"].get<std::string>(), std::string("wan2.2-ti2v-5b"));
    QCOMPARE(by_kind["diffusion_models"]["dtype"].get<std::string>(), std::string("F16"));
    QCOMPARE(by_kind["vae"]["detected"].get<std::string>(), std::string("wan2.2-vae"));
    QCOMPARE(by_kind["text_encoders"]["detected"].get<std::string>(), std::string("umt5-xxl"));
    QVERIFY(by_kind["text_encoders"]["has_tokenizer"].get<bool>());
    QVERIFY(by_kind["text_encoders"]["bytes"].get<uint64_t>() > uint64_t(256384) * 4096 * 2);
    // The same through extra_model_paths.yaml; a folder that is no models folder exits 2.
    QFile yaml(tmp_.filePath("extra_model_paths.yaml"));
    QVERIFY(yaml.open(QIODevice::WriteOnly));
    yaml.write("comfy:\n  base_path: ComfyUI/models\n  vae: vae\n");
    yaml.close();
    const Output y = run_product({"models", "--json", "--model-paths", tmp_.filePath("extra_model_paths.yaml")});
    QCOMPARE(y.exit_code, 0);
    QCOMPARE(json::parse(y.out.toStdString())["files"].size(), size_t(1));
    const Output bad = run_product({"models", tmp_.filePath("ComfyUI/models/vae")});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("is not a ComfyUI models folder"), qPrintable(bad.err));
  }

  // `nodes` prints integer ranges as integers.
  void nodesPrintsIntegerRanges() {
    const Output o = run_tool({"nodes"});
    QCOMPARE(o.exit_code, 0);
    QVERIFY2(o.out.contains("[1, 100000]"), qPrintable(o.out));    // Slow.steps (Int)
    QVERIFY2(o.out.contains("[-100.0, 100.0]"), qPrintable(o.out));  // Scale.factor (Float)
    QVERIFY2(!o.out.contains("[1.0, 100000.0]"), qPrintable(o.out));
  }

  // The product runner loads the attention plugin before every command; its "loaded …" line is no
  // longer printed at info level on stderr (the test runner has no plugin, so this uses bin/).
  void pluginLoadIsQuiet() {
    const QString product = QFileInfo(QStringLiteral(VIDGRAPH_RUN_TEST)).absoluteDir().filePath(
        QStringLiteral("../bin/vidgraph-run"));
    if (!QFileInfo::exists(product)) QSKIP("bin/vidgraph-run is not built");
    QProcess p;
    p.start(product, {QStringLiteral("--version")});
    QVERIFY(p.waitForFinished(60000));
    const QString version = QString::fromUtf8(p.readAllStandardOutput());
    if (!version.contains(QLatin1String("attention plugin: vidgraph_attention"))) QSKIP("no attention plugin found");
    p.start(product, {QStringLiteral("nodes")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(!err.contains(QLatin1String("[plugins] [info]")), qPrintable(err));
  }

  // A dangling link is still an error for the runner (exit 2), naming the node once.
  void validateReportsDanglingLink() {
    const QString path = tmp_.filePath("dangling.vgflow");
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"format":"vidgraph-workflow","version":1,"nodes":[
        {"id":"s","type":"Scale","inputs":{"x":{"node":"gone","output":"value"}}}]})");
    }
    const Output o = run_tool({"validate", path});
    QVERIFY2(o.exit_code == 2, qPrintable(o.out + o.err));
    QVERIFY2((o.out + o.err).contains("'gone', which does not exist"), qPrintable(o.out + o.err));
    QCOMPARE((o.out + o.err).count("node 's'"), 1);
  }

  void validateJson() {
    const Output good = run_tool({"validate", flow("good.vgflow"), "--json"});
    QCOMPARE(good.exit_code, 0);
    QCOMPARE(json::parse(good.out.toStdString())["valid"], json(true));
    const Output bad = run_tool({"validate", flow("invalid.vgflow"), "--json"});
    QCOMPARE(bad.exit_code, 2);
    const json j = json::parse(bad.out.toStdString());
    QCOMPARE(j["valid"], json(false));
    QCOMPARE(j["errors"].size(), std::size_t(3));  // s: input missing + factor out of range; m: unknown type
    QCOMPARE(j["errors"][0]["node"], json("s"));
    QCOMPARE(j["errors"][1]["node"], json("s"));
    QCOMPARE(j["errors"][2]["node"], json("m"));
  }

  void nodesJsonListsEveryType() {
    const Output o = run_tool({"nodes", "--json"});
    QCOMPARE(o.exit_code, 0);
    const json j = json::parse(o.out.toStdString());
    QCOMPARE(j["node_types"].size(), std::size_t(12));
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
    const QString seen = interrupt_after_progress(p);
    QVERIFY2(seen.contains("node_progress"), qPrintable(seen));
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

  void sweepErrors_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("no =") << "good.vgflow" << QStringList{"--sweep", "s.factor"} << "NODE.PARAM=VALUE1,VALUE2";
    QTest::newRow("no node") << "good.vgflow" << QStringList{"--sweep", "factor=1,2"} << "NODE.PARAM=VALUE1,VALUE2";
    QTest::newRow("unknown node") << "good.vgflow" << QStringList{"--sweep", "q.factor=1,2"} << "no node 'q'";
    QTest::newRow("unknown param") << "good.vgflow" << QStringList{"--sweep", "s.speed=1,2"}
                                   << "Scale has no param 'speed' (its params: factor)";
    QTest::newRow("bad value") << "good.vgflow" << QStringList{"--sweep", "s.factor=1,fast"}
                               << "--sweep s.factor=1,fast: param 'factor' takes a number, got 'fast'";
    QTest::newRow("out of range") << "good.vgflow" << QStringList{"--sweep", "slow.steps=5,0"} << "outside [1, 100000]";
    QTest::newRow("empty list") << "good.vgflow" << QStringList{"--sweep", "s.factor="} << "gives no values";
    QTest::newRow("empty value") << "good.vgflow" << QStringList{"--sweep", "s.factor=1,,2"} << "value 2 is empty";
    QTest::newRow("dangling backslash") << "good.vgflow" << QStringList{"--sweep", "s.factor=1\\"}
                                        << "must be followed by ','";
    QTest::newRow("same value twice") << "good.vgflow" << QStringList{"--sweep", "s.factor=2,2.0"}
                                      << "value '2.0' is given twice";
    QTest::newRow("swept twice") << "good.vgflow" << QStringList{"--sweep", "s.factor=1,2", "--sweep", "s.factor=3"}
                                 << "s.factor is swept twice";
    QTest::newRow("also --set") << "good.vgflow" << QStringList{"--sweep", "s.factor=1,2", "--set", "s.factor=3"}
                                << "also given with --set";
    QTest::newRow("too many runs") << "good.vgflow"
                                   << QStringList{"--sweep", "a.value=1,2,3,4,5,6,7,8,9,10,11", "--sweep",
                                                  "s.factor=1,2,3,4,5,6,7,8,9,10", "--sweep",
                                                  "slow.steps=1,2,3,4,5,6,7,8,9,10,11"}
                                   << "more than 1000 runs";
    // A later option is checked even when an earlier one is fine.
    QTest::newRow("second option bad") << "good.vgflow" << QStringList{"--sweep", "s.factor=1,2", "--sweep", "slow.steps=x"}
                                       << "takes an integer, got 'x'";
    QTest::newRow("invalid workflow") << "invalid.vgflow" << QStringList{"--sweep", "s.factor=1,2"}
                                      << "run 1 (s.factor=1): required input 'x' (NUMBER) is not connected";
    QTest::newRow("every run invalid") << "invalid.vgflow" << QStringList{"--sweep", "s.factor=1,2"}
                                       << "2 of 2 runs are invalid";
  }
  void sweepErrors() {
    QFETCH(QString, file);
    QFETCH(QStringList, extra);
    QFETCH(QString, fragment);
    const QString out = tmp_.filePath("sweep_errors");
    const Output o = run_tool(QStringList{"run", flow(qPrintable(file)), "--output-dir", out} + extra);
    QVERIFY2(o.exit_code == 2, qPrintable(QString::number(o.exit_code) + o.out + o.err));
    QVERIFY2(o.err.contains(fragment), qPrintable(o.err));
    QVERIFY2(o.err.contains("nothing ran"), qPrintable(o.err));
    QVERIFY2(!QFile::exists(out), "nothing is written before every run is valid");
    QVERIFY2(!o.out.contains("run_started") && !o.out.contains("started"), qPrintable(o.out));
    // With --json-events every stdout line is JSON and the errors are error events.
    const Output j = run_tool(QStringList{"run", flow(qPrintable(file)), "--json-events", "--output-dir", out} + extra);
    QCOMPARE(j.exit_code, 2);
    const auto lines = json_lines(j.out);
    QVERIFY(!lines.empty());
    for (const json& line : lines) QCOMPARE(line["event"], json("error"));
  }

  void sweepRunsEveryCombinationSharingTheCache() {
    const QString out = tmp_.filePath("sweep_combos");
    const Output o = run_tool({"run", flow("good.vgflow"), "--sweep", "s.factor=1,2", "--sweep", "slow.steps=2,3",
                               "--json-events", "--output-dir", out});
    QVERIFY2(o.exit_code == 0, qPrintable(o.out + o.err));
    const auto lines = json_lines(o.out);
    std::vector<json> started;
    for (const json& j : lines) {
      if (j["event"] == "sweep_summary") continue;
      QVERIFY2(j["run_index"].is_number_integer(), j.dump().c_str());  // every line of a run says which
      if (j["event"] == "sweep_run_started") started.push_back(j);
    }
    // The first option varies slowest; values keep their param's type.
    QCOMPARE(started.size(), std::size_t(4));
    QCOMPARE(started[0]["settings"], json({{"s.factor", 1.0}, {"slow.steps", 2}}));
    QCOMPARE(started[1]["settings"], json({{"s.factor", 1.0}, {"slow.steps", 3}}));
    QCOMPARE(started[2]["settings"], json({{"s.factor", 2.0}, {"slow.steps", 2}}));
    QCOMPARE(started[3]["settings"], json({{"s.factor", 2.0}, {"slow.steps", 3}}));
    QCOMPARE(started[3]["run_index"], json(4));
    QCOMPARE(started[3]["runs"], json(4));
    QCOMPARE(started[1]["output_dir"], json(QDir(out).filePath("run-2").toStdString()));
    // One process, one cache: each run re-executes only what its values change.
    using Outcomes = std::map<std::string, std::string>;
    const auto runs = node_outcomes(lines);
    QCOMPARE(runs.at(1), (Outcomes{{"a", "started"}, {"s", "started"}, {"slow", "started"}, {"sink", "started"}}));
    QCOMPARE(runs.at(2), (Outcomes{{"a", "cached"}, {"s", "cached"}, {"slow", "started"}, {"sink", "started"}}));
    QCOMPARE(runs.at(3), (Outcomes{{"a", "cached"}, {"s", "started"}, {"slow", "started"}, {"sink", "started"}}));
    QCOMPARE(runs.at(4), (Outcomes{{"a", "cached"}, {"s", "cached"}, {"slow", "started"}, {"sink", "started"}}));
    // The progress of run 2 is its own (3 steps).
    for (const json& j : lines) {
      if (j["event"] == "node_progress" && j["run_index"] == 2) QCOMPARE(j["max"], json(3));
    }
    const json summary = lines.back();
    QCOMPARE(summary["event"], json("sweep_summary"));
    QCOMPARE(summary["status"], json("succeeded"));
    QCOMPARE(summary["exit_code"], json(0));
    QCOMPARE(summary["runs"].size(), std::size_t(4));
    QCOMPARE(summary["sweep"][1], json({{"key", "slow.steps"}, {"values", {2, 3}}}));
    for (const json& r : summary["runs"]) QCOMPARE(r["status"], json("succeeded"));
  }

  void sweepWritesEachRunIntoItsFolder() {
    const QString out = tmp_.filePath("sweep_write");
    const QStringList args{"run", flow("write.vgflow"), "--sweep", "w.text=one\\, two,three", "--output-dir", out};
    const Output o = run_tool(args);
    QVERIFY2(o.exit_code == 0, qPrintable(o.out + o.err));
    QCOMPARE(read_text(out + "/run-1/hello.txt"), QString("one, two"));
    QCOMPARE(read_text(out + "/run-2/hello.txt"), QString("three"));
    // Human output: a header per run, then a table with status and outputs per run.
    QVERIFY2(o.out.contains("=== run 1/2: w.text=one, two -> " + out + "/run-1"), qPrintable(o.out));
    QVERIFY2(o.out.contains("=== run 2/2: w.text=three -> " + out + "/run-2"), qPrintable(o.out));
    QVERIFY2(o.out.contains("Sweep: 2 of 2 run(s) succeeded"), qPrintable(o.out));
    QVERIFY2(o.out.contains(QRegularExpression("\\n  2\\s+succeeded\\s+\\S+ s\\s+run-2/hello.txt\\s+w.text=three\\n")),
             qPrintable(o.out));
    const json summary = json::parse(read_text(out + "/sweep.json").toStdString());
    QCOMPARE(summary["format"], json("vidgraph-sweep"));
    QCOMPARE(summary["runs"][0]["settings"], json({{"w.text", "one, two"}}));
    QCOMPARE(summary["runs"][0]["outputs"], json({"run-1/hello.txt"}));
    QCOMPARE(summary["runs"][1]["folder"], json("run-2"));
    // Nothing is replaced without --overwrite: the earlier sweep's summary stops a new one up front.
    const Output again = run_tool(args);
    QCOMPARE(again.exit_code, 2);
    QVERIFY2(again.err.contains("sweep.json' exists"), qPrintable(again.err));
    QCOMPARE(read_text(out + "/run-2/hello.txt"), QString("three"));
    const Output forced = run_tool(QStringList(args) << "--overwrite" << "--set" << "w.file={output}/bye.txt");
    QVERIFY2(forced.exit_code == 0, qPrintable(forced.out + forced.err));
    QCOMPARE(read_text(out + "/run-2/bye.txt"), QString("three"));
    // Ten runs: folders sort by number.
    const Output ten = run_tool({"run", flow("write.vgflow"), "--sweep", "w.text=0,1,2,3,4,5,6,7,8,9", "--output-dir",
                                 tmp_.filePath("sweep_ten")});
    QCOMPARE(ten.exit_code, 0);
    QCOMPARE(read_text(tmp_.filePath("sweep_ten/run-01/hello.txt")), QString("0"));
    QCOMPARE(read_text(tmp_.filePath("sweep_ten/run-10/hello.txt")), QString("9"));
  }

  void sweepCacheBudget_data() {
    QTest::addColumn<QStringList>("budget");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("big_in_run_2");  // what the 2 GiB node does in run 2
    QTest::newRow("default keeps it") << QStringList{} << 0 << "cached";
    QTest::newRow("3 GiB keeps it") << QStringList{"--cache-budget", "3"} << 0 << "cached";
    QTest::newRow("1.5 GiB cannot") << QStringList{"--cache-budget", "1.5"} << 0 << "started";
    QTest::newRow("zero") << QStringList{"--cache-budget", "0"} << 2 << "";
    QTest::newRow("not a number") << QStringList{"--cache-budget", "lots"} << 2 << "";
  }
  void sweepCacheBudget() {
    QFETCH(QStringList, budget);
    QFETCH(int, code);
    QFETCH(QString, big_in_run_2);
    const QTemporaryDir out;
    const Output o = run_tool(QStringList{"run", flow("cache.vgflow"), "--sweep", "s.factor=1,2", "--json-events",
                                          "--output-dir", out.path()} + budget);
    QVERIFY2(o.exit_code == code, qPrintable(o.out + o.err));
    if (code != 0) {
      QVERIFY2(o.err.contains("--cache-budget"), qPrintable(o.err));
      return;
    }
    const auto runs = node_outcomes(json_lines(o.out));
    QCOMPARE(runs.at(1).at("big"), std::string("started"));
    QCOMPARE(runs.at(2).at("big"), big_in_run_2.toStdString());
    QCOMPARE(runs.at(2).at("s"), std::string("started"));
  }

  void sweepRefusesAFileWhereARunFolderGoes() {
    const QString out = tmp_.filePath("sweep_blocked");
    QVERIFY(QDir().mkpath(out));
    QFile blocker(out + "/run-2");
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const Output o = run_tool({"run", flow("write.vgflow"), "--sweep", "w.text=a,b", "--output-dir", out});
    QCOMPARE(o.exit_code, 2);
    QVERIFY2(o.err.contains("run-2' is a file, but run 2 needs it as its folder"), qPrintable(o.err));
    QVERIFY2(!QFile::exists(out + "/run-1"), "nothing ran");
  }

  void sweepStopsAtTheFirstFailure() {
    const QString out = tmp_.filePath("sweep_fail");
    const Output o = run_tool({"run", flow("fail.vgflow"), "--sweep", "a.value=1,2,3", "--json-events", "--output-dir", out});
    QCOMPARE(o.exit_code, 3);
    const auto lines = json_lines(o.out);
    const json summary = lines.back();
    QCOMPARE(summary["event"], json("sweep_summary"));
    QCOMPARE(summary["status"], json("failed"));
    QCOMPARE(summary["exit_code"], json(3));
    QCOMPARE(summary["runs"][0]["status"], json("failed"));
    QCOMPARE(summary["runs"][0]["message"], json("node 'bad': model file is corrupt"));
    QCOMPARE(summary["runs"][1]["status"], json("not_run"));
    QCOMPARE(summary["runs"][2]["status"], json("not_run"));
    QCOMPARE(summary["message"], json("stopped: run 1 failed; runs 2-3 were not run"));
    for (const json& j : lines) QVERIFY(j["event"] != "sweep_run_started" || j["run_index"] == 1);
    QVERIFY2(o.err.contains("runs 2-3 were not run"), qPrintable(o.err));
    // No run succeeded: nothing is left behind, not even an empty run folder; the history says what ran.
    QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList{"vidgraph-history.jsonl"});
    QVERIFY(read_text(out + "/vidgraph-history.jsonl").contains("\"status\":\"failed\""));
  }

  void sweepCtrlCCancelsAndStops() {
    const QString out = tmp_.filePath("sweep_cancel");
    QProcess p;
    p.start(QStringLiteral(VIDGRAPH_RUN_TEST),
            {"run", flow("slow.vgflow"), "--sweep", "slow.step_ms=5,6", "--json-events", "--output-dir", out});
    QVERIFY(p.waitForStarted());
    const QString seen = interrupt_after_progress(p);
    QVERIFY2(seen.contains("node_progress"), qPrintable(seen));
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitCode(), 130);
    const auto lines = json_lines(seen + QString::fromUtf8(p.readAllStandardOutput()));
    const json summary = lines.back();
    QCOMPARE(summary["event"], json("sweep_summary"));
    QCOMPARE(summary["status"], json("cancelled"));
    QCOMPARE(summary["exit_code"], json(130));
    QCOMPARE(summary["runs"][0]["status"], json("cancelled"));
    QCOMPARE(summary["runs"][1]["status"], json("not_run"));
    QCOMPARE(summary["message"], json("cancelled during run 1; run 2 was not run"));
    QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList{"vidgraph-history.jsonl"});
    QVERIFY(read_text(out + "/vidgraph-history.jsonl").contains("\"status\":\"cancelled\""));
  }

  // "bypass": true in the file: a bypassed Scale is not run (node_bypassed, and the nodes after it
  // run); a bypassed writer writes nothing while the rest of the graph runs; with only bypassed
  // outputs there is nothing to run (exit 2).
  void bypassedNodesInTheFile() {
    auto write = [&](const QString& name, const QByteArray& text) {
      QFile f(tmp_.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) return QString();
      f.write(text);
      return f.fileName();
    };
    QFile good(flow("good.vgflow"));
    QVERIFY(good.open(QIODevice::ReadOnly));
    QByteArray text = good.readAll();
    text.replace("\"type\": \"Scale\",", "\"type\": \"Scale\", \"bypass\": true,");
    const Output o = run_tool({"run", write("bypass-scale.vgflow", text), "--json-events", "--output-dir", tmp_.filePath("o")});
    QVERIFY2(o.exit_code == 0, qPrintable(o.out + o.err));
    std::map<std::string, std::string> seen;
    for (const json& j : json_lines(o.out)) {
      if (j.contains("node") && j["node"].is_string() && j["event"] != "node_queued") seen[j["node"]] = j["event"];
    }
    QCOMPARE(seen["s"], std::string("node_bypassed"));
    QCOMPARE(seen["sink"], std::string("node_finished"));
    const QString out = tmp_.filePath("muted");
    const QString muted = write("bypass-writer.vgflow", R"({"format": "vidgraph-workflow", "version": 1, "nodes": [
      {"id": "w", "type": "WriteText", "bypass": true, "params": {"file": "{output}/hello.txt"}},
      {"id": "a", "type": "Number", "params": {"value": 1}},
      {"id": "k", "type": "Sink", "inputs": {"value": {"node": "a", "output": "value"}}}]})");
    const Output m = run_tool({"run", muted, "--output-dir", out});
    QVERIFY2(m.exit_code == 0, qPrintable(m.out + m.err));
    QVERIFY(!QFile::exists(out + "/hello.txt"));
    const Output none = run_tool({"run", write("bypass-all.vgflow", R"({"format": "vidgraph-workflow", "version": 1, "nodes": [
      {"id": "w", "type": "WriteText", "bypass": true}]})"), "--output-dir", out});
    QCOMPARE(none.exit_code, 2);
    QVERIFY2(none.err.contains("every output node is bypassed"), qPrintable(none.err));
  }

  // Every run that ran is a line of its output folder's history: the workflow with the values it ran
  // with, status, node times, the files it wrote. `history` lists them and gives a run's workflow
  // back, which re-runs to the same file. --no-history and invalid runs add nothing; a torn line is
  // skipped with a warning.
  void historyRecordsEveryRun() {
    const QString out = tmp_.filePath("history");
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.text=first"}).exit_code, 0);
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.file={output}/two.txt",
                       "--set", "w.text=second"}).exit_code, 0);
    QCOMPARE(run_tool({"run", flow("fail.vgflow"), "--output-dir", out}).exit_code, 3);
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.file={output}/three.txt",
                       "--no-history"}).exit_code, 0);
    QCOMPARE(run_tool({"run", flow("invalid.vgflow"), "--output-dir", out}).exit_code, 2);

    const QStringList lines = read_text(out + "/vidgraph-history.jsonl").split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    const json first = json::parse(lines[0].toStdString());
    QCOMPARE(first["status"], json("succeeded"));
    QCOMPARE(first["source"], json(flow("write.vgflow").toStdString()));
    QCOMPARE(first["files"], json::array({{{"node", "w"}, {"path", (out + "/hello.txt").toStdString()}}}));
    QCOMPARE(first["nodes"][0]["id"], json("w"));
    QCOMPARE(first["nodes"][0]["outcome"], json("finished"));
    QCOMPARE(first["workflow"]["nodes"][0]["params"]["text"], json("first"));  // the value it ran with
    QVERIFY(first["started"].get<std::string>().size() == 20);                // 2026-12-06T23:01:02Z
    const json failed = json::parse(lines[2].toStdString());
    QCOMPARE(failed["status"], json("failed"));
    QVERIFY2(!failed["error"].get<std::string>().empty(), lines[2].toUtf8().constData());
    QCOMPARE(failed["files"], json::array());

    const Output listed = run_tool({"history", out});
    QVERIFY2(listed.exit_code == 0, qPrintable(listed.out + listed.err));
    QCOMPARE(listed.out.count("succeeded"), 2);
    QCOMPARE(listed.out.count("failed"), 1);
    QVERIFY2(listed.out.contains(out + "/two.txt"), qPrintable(listed.out));

    // Run 2's workflow, saved and run again elsewhere, writes what run 2 wrote.
    const QString again = tmp_.filePath("history-again.vgflow");
    QVERIFY(save_history_workflow(out, 2, again));
    const QString out2 = tmp_.filePath("history2");
    QCOMPARE(run_tool({"run", again, "--output-dir", out2}).exit_code, 0);
    QCOMPARE(read_text(out2 + "/two.txt"), QString("second"));

    const Output diff = run_tool({"history", out, "--diff", "1", "2"});
    QCOMPARE(diff.exit_code, 0);
    QCOMPARE(diff.out, QString("w.file: \"{output}/hello.txt\" -> \"{output}/two.txt\"\n"
                               "w.text: \"first\" -> \"second\"\n"));
    QVERIFY(run_tool({"history", out, "--diff", "1", "1"}).out.contains("same settings"));

    const Output missing = run_tool({"history", out, "--workflow", "9"});
    QCOMPARE(missing.exit_code, 2);
    QVERIFY2(missing.err.contains("has runs 1 to 3; there is no run 9"), qPrintable(missing.err));
    QVERIFY(QDir().mkpath(tmp_.filePath("no-runs")));
    const Output none = run_tool({"history", tmp_.filePath("no-runs")});
    QCOMPARE(none.exit_code, 2);
    QVERIFY2(none.err.contains("no run history"), qPrintable(none.err));

    QFile history(out + "/vidgraph-history.jsonl");  // a run killed mid-line
    QVERIFY(history.open(QIODevice::Append));
    history.write("{\"format\": \"vidgraph-run\", \"sta");
    history.close();
    const Output torn = run_tool({"history", out, "--json"});
    QCOMPARE(torn.exit_code, 0);
    QVERIFY2(torn.err.contains("1 line(s)"), qPrintable(torn.err));
    QCOMPARE(json::parse(torn.out.toStdString()).size(), std::size_t(3));
  }

  // A workflow of nested subgraphs runs headless: --set reaches an exposed param through both
  // levels and an inner node by its path; the inner nodes run under their paths, and the run's
  // history keeps the expanded workflow, which runs again as it is.
  void subgraphsRunHeadless() {
    const QString out = tmp_.filePath("subgraph");
    const Output o = run_tool({"run", flow("subgraph.vgflow"), "--output-dir", out, "--set", "notes.text=exposed",
                               "--set", "notes/second.text=by path", "--json-events"});
    QVERIFY2(o.exit_code == 0, qPrintable(o.out + o.err));
    QCOMPARE(read_text(out + "/note.txt"), QString("exposed"));
    QCOMPARE(read_text(out + "/second.txt"), QString("by path"));
    std::set<std::string> finished;
    for (const json& j : json_lines(o.out)) {
      if (j["event"] == "node_finished") finished.insert(j["node"].get<std::string>());
    }
    QCOMPARE(finished, (std::set<std::string>{"notes/first/w", "notes/second"}));
    const QString again = tmp_.filePath("subgraph-again.vgflow");
    QVERIFY(save_history_workflow(out, 1, again));
    QCOMPARE(run_tool({"run", again, "--output-dir", tmp_.filePath("subgraph2")}).exit_code, 0);
    QCOMPARE(read_text(tmp_.filePath("subgraph2/note.txt")), QString("exposed"));
    // A sweep over an inner param by path.
    const QString swept = tmp_.filePath("subgraph-sweep");
    QCOMPARE(run_tool({"run", flow("subgraph.vgflow"), "--output-dir", swept, "--sweep", "notes/second.text=a,b"})
                 .exit_code, 0);
    QCOMPARE(read_text(swept + "/run-2/second.txt"), QString("b"));
    // A sweep over an exposed param, through both levels, is one over the inner param it sets.
    const QString exposed = tmp_.filePath("subgraph-sweep-exposed");
    const Output sweep = run_tool({"run", flow("subgraph.vgflow"), "--output-dir", exposed, "--sweep", "notes.text=x,y"});
    QVERIFY2(sweep.exit_code == 0, qPrintable(sweep.out + sweep.err));
    QCOMPARE(read_text(exposed + "/run-1/note.txt"), QString("x"));
    QCOMPARE(read_text(exposed + "/run-2/note.txt"), QString("y"));
    const json summary = json::parse(read_text(exposed + "/sweep.json").toStdString());
    QCOMPARE(summary["runs"][1]["settings"]["notes/first/w.text"].get<std::string>(), std::string("y"));
    const Output unexposed = run_tool({"run", flow("subgraph.vgflow"), "--output-dir", tmp_.filePath("subgraph-sweep-bad"),
                                       "--sweep", "notes.file=a,b"});
    QCOMPARE(unexposed.exit_code, 2);
    QVERIFY2(unexposed.err.contains("--sweep notes.file=a,b: subgraph 'two_writers' exposes no param 'file' (it exposes: "
                                    "text); sweep an inner node's param as notes/NODE.PARAM"),
             qPrintable(unexposed.err));
    const Output bad = run_tool({"validate", flow("subgraph.vgflow"), "--set", "notes.file=x"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("subgraph 'two_writers' exposes no param 'file' (it exposes: text)"),
             qPrintable(bad.err));
  }

  void outputDirOverwriteAndPaths() {
    const QString out = tmp_.filePath("written");
    const Output first = run_tool({"run", flow("write.vgflow"), "--output-dir", out});
    QCOMPARE(first.exit_code, 0);
    QFile f(out + "/hello.txt");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("hello"));
    f.close();
    const Output again = run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.text=bye"});
    QCOMPARE(again.exit_code, 3);
    QVERIFY(again.err.contains("--overwrite"));
    const Output forced = run_tool({"run", flow("write.vgflow"), "--output-dir", out, "--set", "w.text=bye", "--overwrite"});
    QCOMPARE(forced.exit_code, 0);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("bye"));
    f.close();
    // {resources}/ and workflow-relative paths.
    const QString res = tmp_.filePath("res");
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--resources", res, "--set", "w.file={resources}/r.txt"}).exit_code, 0);
    QVERIFY(QFile::exists(res + "/r.txt"));
    QDir().mkpath(tmp_.filePath("flows"));
    QVERIFY(QFile::copy(flow("write.vgflow"), tmp_.filePath("flows/w.vgflow")));
    const QString elsewhere = tmp_.filePath("elsewhere");  // the current folder: the run's output folder
    QVERIFY(QDir().mkpath(elsewhere));
    QCOMPARE(run_tool({"run", tmp_.filePath("flows/w.vgflow"), "--set", "w.file=rel/x.txt"}, elsewhere).exit_code, 0);
    QVERIFY(QFile::exists(tmp_.filePath("flows/rel/x.txt")));
    QVERIFY(QFile::exists(elsewhere + "/vidgraph-history.jsonl"));
    // An output folder that cannot be made is an argument error.
    QCOMPARE(run_tool({"run", flow("write.vgflow"), "--output-dir", flow("write.vgflow") + "/sub"}).exit_code, 2);
  }
};

QTEST_GUILESS_MAIN(tst_Cli)
#include "tst_cli.moc"
