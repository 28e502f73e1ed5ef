// CLI suite, hostile input: vidgraph-run-test as a child process given non-finite numbers, options
// that make the run invalid after the output folder was named, and file names that are not UTF-8
// (legal on Linux). Every case must end with a clear message and the documented exit code: never
// a crash, an "internal error", a library exception's text, or a new empty folder after exit 2.
//
// Non-UTF-8 bytes cannot travel through QString arguments, so those cases run the tool from
// /bin/sh, whose printf makes the bytes ("\377" = 0xFF); the test reads paths as raw bytes.
#include <QtCore/QByteArray>
#include <QtCore/QFile>
#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Output {
  int code = -1;
  QByteArray out;
  QByteArray err;
  QString text() const { return QString::fromUtf8(out + err); }
};

QString flow(const char* name) { return QStringLiteral(VIDGRAPH_SOURCE_DIR "/tests/cli/data/") + name; }

Output finish(QProcess& p) {
  if (!p.waitForFinished(60000)) {
    p.kill();
    p.waitForFinished();
    return Output{-2, {}, "timed out"};
  }
  return Output{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                p.readAllStandardError()};
}

Output run_tool(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(VIDGRAPH_RUN_TEST), args);
  return finish(p);
}

// run_tool with a short limit: a command that blocks opening a FIFO fails the test instead of hanging it.
Output run_tool_quickly(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(VIDGRAPH_RUN_TEST), args);
  if (!p.waitForFinished(10000)) {
    p.kill();
    p.waitForFinished();
    return Output{-2, {}, "timed out: the command blocked"};
  }
  return Output{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                p.readAllStandardError()};
}

// Runs `script` with /bin/sh: $1 is the tool, $2... are `args`.
Output run_shell(const QString& script, const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral("/bin/sh"), QStringList{"-c", script, "sh", QStringLiteral(VIDGRAPH_RUN_TEST)} + args);
  return finish(p);
}

// The first stdout line that is not strict JSON (nlohmann refuses invalid UTF-8), or "".
QString bad_json_line(const QByteArray& out) {
  for (const QByteArray& line : out.split('\n')) {
    if (line.isEmpty()) continue;
    if (!json::accept(line.toStdString())) return QString::fromUtf8(line);
  }
  return {};
}

// A PNG sequence as Export Video writes it (a folder of frames and metadata.json), as someone would
// share it: its metadata.json embeds a WriteText workflow that writes `text` to `file`.
QString shared_sequence(const QString& folder, const std::string& file, const std::string& text) {
  const json workflow{{"format", "vidgraph-workflow"},
                      {"version", 1},
                      {"nodes", json::array({{{"id", "w"}, {"type", "WriteText"},
                                              {"params", {{"file", file}, {"text", text}}}}})}};
  const json meta{{"format", "vidgraph-png-sequence"}, {"frames", 1},   {"width", 16},
                  {"height", 16}, {"fps", 16.0}, {"workflow", workflow.dump()}};
  fs::create_directories(folder.toStdString());
  std::ofstream(folder.toStdString() + "/frame_000001.png") << "not looked at";
  std::ofstream(folder.toStdString() + "/metadata.json") << meta.dump(2) << "\n";
  return folder;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_no_internal_error(const Output& o) {
  const QString all = o.text();
  QVERIFY2(!all.contains("internal error") && !all.contains("json.exception") && !all.contains("terminate"),
           qPrintable(all));
}

}  // namespace

class tst_CliHostile : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  std::string root() const { return tmp_.path().toStdString(); }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(tmp_.isValid()); }
  // QTemporaryDir cannot remove names that are not UTF-8.
  void cleanupTestCase() {
    std::error_code ec;
    fs::remove_all(root(), ec);
  }

  void nonFiniteNumbersAreRefused_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("cache budget nan") << QStringList{"--cache-budget", "nan"} << "--cache-budget";
    QTest::newRow("cache budget inf") << QStringList{"--cache-budget", "inf"} << "--cache-budget";
    QTest::newRow("cache budget -inf") << QStringList{"--cache-budget", "-inf"} << "--cache-budget";
    QTest::newRow("cache budget negative") << QStringList{"--cache-budget", "-1"} << "--cache-budget";
    QTest::newRow("cache budget past size_t") << QStringList{"--cache-budget", "1e300"} << "--cache-budget";
    QTest::newRow("float param nan") << QStringList{"--set", "s.factor=nan"} << "s.factor=nan";
    QTest::newRow("float param inf") << QStringList{"--set", "s.factor=inf"} << "s.factor=inf";
    QTest::newRow("float param overflow") << QStringList{"--set", "s.factor=1e999"} << "s.factor=1e999";
    QTest::newRow("int param nan") << QStringList{"--set", "slow.steps=nan"} << "takes an integer";
    QTest::newRow("sweep value nan") << QStringList{"--sweep", "s.factor=1,nan"} << "nan";
  }
  void nonFiniteNumbersAreRefused() {
    QFETCH(QStringList, args);
    QFETCH(QString, fragment);
    const QString out = tmp_.filePath("nonfinite");
    const Output o = run_tool(QStringList{"run", flow("good.vgflow"), "--output-dir", out} + args);
    QVERIFY2(o.code == 2, qPrintable(QString::number(o.code) + "\n" + o.text()));
    QVERIFY2(o.err.contains(fragment.toUtf8()), qPrintable(o.text()));
    QVERIFY2(!QFile::exists(out), "an invalid invocation left its output folder behind");
    expect_no_internal_error(o);
  }

  // The command line's own files (run/validate FILE, compare A B) are checked before anything opens
  // them: a FIFO would block the open forever, a device would never end.
  void nonRegularCommandFilesAreRefused_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("special");  // "fifo": one the test makes; else the path itself
    QTest::addColumn<QString>("fragment");
    QTest::newRow("run FIFO") << "run" << "fifo" << "a FIFO (named pipe), not a regular file";
    QTest::newRow("run FIFO.mp4") << "run" << "fifo.mp4" << "a FIFO (named pipe), not a regular file";
    QTest::newRow("validate FIFO") << "validate" << "fifo" << "a FIFO (named pipe), not a regular file";
    QTest::newRow("validate device") << "validate" << "/dev/zero" << "a character device, not a regular file";
    QTest::newRow("compare FIFO FILE") << "compare" << "fifo" << "compare's first input";
    QTest::newRow("compare FILE FIFO") << "compare-b" << "fifo" << "compare's second input";
  }
  void nonRegularCommandFilesAreRefused() {
    QFETCH(QString, command);
    QFETCH(QString, special);
    QFETCH(QString, fragment);
    QString path = special;
    if (!special.startsWith('/')) {
      path = tmp_.filePath("pipes/" + special);
      fs::create_directories(tmp_.filePath("pipes").toStdString());
      if (!fs::exists(fs::symlink_status(path.toStdString()))) {
        QCOMPARE(::mkfifo(path.toLocal8Bit().constData(), 0600), 0);
      }
    }
    const QString regular = tmp_.filePath("pipes/regular.mp4");
    std::ofstream(regular.toStdString()) << "not a video";
    QStringList args;
    if (command == "compare") args = {"compare", path, regular};
    else if (command == "compare-b") args = {"compare", regular, path};
    else args = {command, path};
    const Output o = run_tool_quickly(args);
    QVERIFY2(o.code == 2, qPrintable(QString::number(o.code) + "\n" + o.text()));
    QVERIFY2(o.err.contains(fragment.toUtf8()), qPrintable(o.text()));
    QVERIFY2(o.err.contains(path.toUtf8()), qPrintable(o.text()));  // the sentence names the path
    expect_no_internal_error(o);
  }

  void invalidRunLeavesNoNewFolder_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("invalid workflow") << QStringList{flow("invalid.vgflow")} << "unknown node type";
    QTest::newRow("unknown target") << QStringList{flow("good.vgflow"), "--target", "zz"} << "no node 'zz'";
    QTest::newRow("invalid workflow, json events") << QStringList{flow("invalid.vgflow"), "--json-events"}
                                                   << "unknown node type";
  }
  void invalidRunLeavesNoNewFolder() {
    QFETCH(QStringList, args);
    QFETCH(QString, fragment);
    // Two missing levels: both were created by this invocation, both must go.
    const QString top = tmp_.filePath("invalid_top");
    const QString out = top + "/inner/";
    const Output o = run_tool(QStringList{"run"} + args + QStringList{"--output-dir", out});
    QVERIFY2(o.code == 2, qPrintable(QString::number(o.code) + "\n" + o.text()));
    QVERIFY2(o.text().contains(fragment), qPrintable(o.text()));
    QVERIFY2(!QFile::exists(top), "exit 2 left the output folder it created behind");
    // A folder that existed before stays, even when empty.
    QVERIFY(QDir().mkpath(out));
    QCOMPARE(run_tool(QStringList{"run"} + args + QStringList{"--output-dir", out}).code, 2);
    QVERIFY2(QFile::exists(out), "exit 2 removed a folder it did not create");
    QVERIFY(QDir(top).removeRecursively());
  }

  void nonUtf8OutputDirWorks() {
    const Output o = run_shell(R"sh(exec "$1" run "$2" --json-events --output-dir "$(printf '%s/out\377' "$3")")sh",
                               {flow("write.vgflow"), tmp_.path()});
    QVERIFY2(o.code == 0, qPrintable(QString::number(o.code) + "\n" + o.text()));
    expect_no_internal_error(o);
    QVERIFY2(bad_json_line(o.out).isEmpty(), qPrintable(bad_json_line(o.out)));
    const fs::path written = fs::path(root()) / "out\xff" / "hello.txt";
    QVERIFY2(fs::exists(written), written.c_str());
  }

  void nonUtf8PathParamWorks() {
    // Plain and --json-events output; the param keys the cache (the key once came from json::dump,
    // which throws on invalid UTF-8: "internal error ... type_error.316").
    for (const char* mode : {"--overwrite", "--json-events"}) {
      const QString dir = tmp_.filePath(QStringLiteral("param_%1").arg(QString(mode).mid(2)));
      const Output o = run_shell(R"sh(exec "$1" run "$2" "$4" --output-dir "$3" --set "$(printf 'w.file={output}/\376.txt')")sh",
                                 {flow("write.vgflow"), dir, QString::fromLatin1(mode)});
      QVERIFY2(o.code == 0, qPrintable(QString::number(o.code) + "\n" + o.text()));
      expect_no_internal_error(o);
      if (QByteArray(mode) == "--json-events") QVERIFY2(bad_json_line(o.out).isEmpty(), qPrintable(bad_json_line(o.out)));
      const fs::path written = fs::path(dir.toStdString()) / "\xfe.txt";
      QVERIFY2(fs::exists(written), written.c_str());
    }
  }

  void nonUtf8WorkflowPathWorks() {
    const fs::path dir = fs::path(root()) / "flows\xfd";
    fs::create_directories(dir);
    fs::copy_file(flow("good.vgflow").toStdString(), dir / "good.vgflow");
    const std::string bad_flow = (dir / "bad.vgflow").string();
    std::ofstream(bad_flow) << "{\"format\": \"vidgraph-workflow\", \"version\": 1, \"nodes\": [";
    const QString shell_dir = R"sh("$(printf '%s/flows\375' "$2")")sh";
    struct Case {
      QString command;
      int code;
    };
    const std::vector<Case> cases{
        {"validate " + shell_dir + "/good.vgflow --json", 0},
        {"run " + shell_dir + "/good.vgflow --json-events --output-dir \"$2/flow_out\"", 0},
        {"validate " + shell_dir + "/bad.vgflow --json", 2},
        {"run " + shell_dir + "/bad.vgflow --json-events --output-dir \"$2/flow_out\"", 2},
        {"run " + shell_dir + "/missing.vgflow --json-events", 2},
        {"run " + shell_dir + "/good.vgflow --sweep s.factor=1,2 --json-events --output-dir \"$2/sweep_out\"", 0},
    };
    for (const Case& c : cases) {
      const Output o = run_shell(R"(exec "$1" )" + c.command, {tmp_.path()});
      QVERIFY2(o.code == c.code, qPrintable(c.command + " -> " + QString::number(o.code) + "\n" + o.text()));
      expect_no_internal_error(o);
      if (c.command.startsWith("validate")) {
        QVERIFY2(json::accept(o.out.toStdString()), qPrintable(c.command + ": " + QString::fromUtf8(o.out)));
      } else {
        QVERIFY2(bad_json_line(o.out).isEmpty(), qPrintable(c.command + ": " + bad_json_line(o.out)));
      }
    }
    QVERIFY(fs::exists(fs::path(root()) / "sweep_out" / "sweep.json"));
  }

  // A workflow that came inside a shared file (here a PNG sequence's metadata.json) writes only
  // inside --output-dir: a place outside stops the run before any node starts, exit 2, naming the
  // node, the param, the path and the ways out; --allow-outside-writes lets it write there.
  void sharedWorkflowWritesOnlyInsideTheOutputFolder_data() {
    QTest::addColumn<QString>("file");  // the embedded workflow's path; "@" = the test's folder
    QTest::addColumn<QString>("written");  // where it would write, relative to the test's folder
    QTest::newRow("absolute") << "@/victim/absolute.txt" << "victim/absolute.txt";
    QTest::newRow("relative ..") << "../victim/relative.txt" << "victim/relative.txt";
    QTest::newRow("{output}/ through a link") << "{output}/link/linked.txt" << "victim/linked.txt";
  }
  void sharedWorkflowWritesOnlyInsideTheOutputFolder() {
    QFETCH(QString, file);
    QFETCH(QString, written);
    const QString dir = tmp_.filePath("shared_" + QString(QTest::currentDataTag()).replace(' ', '_'));
    const std::string victim = (dir + "/" + written).toStdString();
    fs::create_directories(fs::path(victim).parent_path());
    const QString out = dir + "/out";
    fs::create_directories(out.toStdString());
    fs::create_directory_symlink(fs::path(victim).parent_path(), out.toStdString() + "/link");
    file.replace("@", dir);
    // A relative path resolves against the folder of what was run: DIR/shared for the sequence's folder.
    const QString sequence = shared_sequence(dir + "/shared/clip", file.toStdString(), "from a stranger");

    const Output refused = run_tool({"run", sequence, "--output-dir", out});
    QVERIFY2(refused.code == 2, qPrintable(QString::number(refused.code) + "\n" + refused.text()));
    for (const QString& fragment : {QStringLiteral("node 'w'"), QStringLiteral("param 'file'"),
                                    QStringLiteral("outside the output folder"),
                                    QStringLiteral("--allow-outside-writes"), QStringLiteral("{output}/")}) {
      QVERIFY2(refused.err.contains(fragment.toUtf8()), qPrintable(fragment + " missing:\n" + refused.text()));
    }
    QVERIFY2(!fs::exists(victim), victim.c_str());
    expect_no_internal_error(refused);
    // Run as the metadata.json itself: refused the same way (its relative paths resolve one level deeper).
    const Output by_file = run_tool({"run", sequence + "/metadata.json", "--output-dir", out});
    QVERIFY2(by_file.code == 2, qPrintable(QString::number(by_file.code) + "\n" + by_file.text()));
    QVERIFY2(by_file.err.contains("outside the output folder"), qPrintable(by_file.text()));
    QVERIFY2(!fs::exists(victim), victim.c_str());
    QVERIFY(!fs::exists(dir.toStdString() + "/shared/victim"));

    const Output allowed = run_tool({"run", sequence, "--output-dir", out, "--allow-outside-writes"});
    QVERIFY2(allowed.code == 0, qPrintable(QString::number(allowed.code) + "\n" + allowed.text()));
    QCOMPARE(read_text(victim), std::string("from a stranger"));
  }

  // Inside the output folder a shared workflow runs as before, {output}/ or an absolute path there.
  void sharedWorkflowWritesInsideTheOutputFolder() {
    const QString dir = tmp_.filePath("shared_inside");
    const QString out = dir + "/out";
    const QString sequence = shared_sequence(dir + "/clip", "{output}/a/inside.txt", "kept");
    const Output o = run_tool({"run", sequence, "--output-dir", out});
    QVERIFY2(o.code == 0, qPrintable(QString::number(o.code) + "\n" + o.text()));
    QCOMPARE(read_text(out.toStdString() + "/a/inside.txt"), std::string("kept"));
    const QString absolute = shared_sequence(dir + "/clip2", out.toStdString() + "/absolute.txt", "kept too");
    const Output abs = run_tool({"run", absolute, "--output-dir", out});
    QVERIFY2(abs.code == 0, qPrintable(QString::number(abs.code) + "\n" + abs.text()));
    QCOMPARE(read_text(out.toStdString() + "/absolute.txt"), std::string("kept too"));
  }

  // A .vgflow the user names is trusted as before: its absolute path is written.
  void namedWorkflowWritesWhereItSays() {
    const QString dir = tmp_.filePath("named");
    fs::create_directories(dir.toStdString());
    const std::string target = dir.toStdString() + "/elsewhere/named.txt";
    const Output o = run_tool({"run", flow("write.vgflow"), "--output-dir", dir + "/out", "--set",
                               QString::fromStdString("w.file=" + target)});
    QVERIFY2(o.code == 0, qPrintable(QString::number(o.code) + "\n" + o.text()));
    QCOMPARE(read_text(target), std::string("hello"));
  }
};

QTEST_GUILESS_MAIN(tst_CliHostile)
#include "tst_cli_hostile.moc"
