// Output safety of every writer (app/nodes/output_path.h and the writer nodes): nothing a writer
// did not create is deleted or replaced (folders, devices, FIFOs, symlinks, other files), naming
// policies (increment by default, fail found before any node runs, overwrite of own outputs only),
// no-replace publishing under real concurrent processes and on the fallback path, stale temporaries
// of killed writers, and "{output}/.." refused at validation. Destructive cases run in a temporary
// folder and assert that the victim files survive.
#include <ATen/ops/randn.h>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <set>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/registry.h"
#include "models/io/safetensors.h"
#include "nodes/media/video_export.h"
#include "nodes/output_path.h"
#include "nodes/sampling/latent.h"
#include "nodes/session.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;
using nodes_test::Recorder;
using nodes_test::make_context;

namespace {

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A folder holding one file that must survive everything.
fs::path make_victim(const fs::path& folder) {
  fs::create_directories(folder);
  write_text(folder / "precious.txt", "precious");
  return folder / "precious.txt";
}

engine::Value gradient_video(int count) {
  Video video;
  video.frames = Frames{count, 32, 16, {}};
  video.frames.rgb.resize(video.frames.frame_bytes() * count);
  for (std::size_t i = 0; i < video.frames.rgb.size(); ++i) {
    video.frames.rgb[i] = static_cast<std::uint8_t>((i * 7 + count) % 251);
  }
  return engine::make_value(kVideoType, video);
}

// A pid that no process has: a child that already exited and was reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

std::size_t entries(const fs::path& folder) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

}  // namespace

class tst_outputs : public QObject {
  Q_OBJECT

 private:
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
  const engine::NodeType& type(const char* name) { return nodes_test::find_type(registry_, name); }

  // Runs `type` once through make_context with `params` and a video input.
  engine::Result<engine::ValueMap> run_writer(const char* name, const nlohmann::json& params,
                                              const engine::RunOptions& options = {}, int frames = 2) {
    Recorder rec;
    const engine::NodeType& t = type(name);
    auto ctx = make_context(t, params, {{"video", gradient_video(frames)}}, options, &rec);
    return t.compute(ctx);
  }

  // A LoadLatent → SaveLatent graph whose saver writes `filename` with `naming`.
  engine::GraphDocument latent_graph(const fs::path& folder, const std::string& filename,
                                     const std::string& naming) {
    const std::string source = (folder / "source.safetensors").string();
    if (!fs::exists(source)) {
      model_io::save_safetensors(source, {{kLatentTensorName, at::randn({1, 4, 1, 2, 2})}},
                                 {{kLatentFormatKey, kLatentFormatValue}});
    }
    engine::GraphDocument doc;
    doc.set_registry(&registry_);
    doc.add_node(engine::Node{"load", "LoadLatent", 1, {{"path", source}}, {}, {}});
    doc.add_node(engine::Node{"save", "SaveLatent", 2, {{"filename", filename}, {"naming", naming}}, {}, {}});
    doc.connect("save", "latent", engine::InputLink{"load", "latent"});
    return doc;
  }

 private Q_SLOTS:
  void contactSheetNeverDeletesAFolder() {
    QTemporaryDir tmp;
    const fs::path out(tmp.path().toStdString());
    const fs::path victim = make_victim(out / "sheets");
    engine::RunOptions options;
    options.output_dir = out.string();
    auto result = run_writer("PreviewVideo", {{"contact_sheet", "{output}/sheets"}}, options);
    QVERIFY(!result.ok());
    QVERIFY2(result.error().message.find("is a folder") != std::string::npos, result.error().message.c_str());
    QCOMPARE(read_text(victim), std::string("precious"));
    // Even with the run's --overwrite.
    options.overwrite = true;
    QVERIFY(!run_writer("PreviewVideo", {{"contact_sheet", (out / "sheets").string()}}, options).ok());
    QCOMPARE(read_text(victim), std::string("precious"));
  }

  void contactSheetsKeepEarlierSheets() {
    QTemporaryDir tmp;
    const fs::path out(tmp.path().toStdString());
    engine::RunOptions options;
    options.output_dir = out.string();
    QVERIFY(run_writer("PreviewVideo", {{"contact_sheet", "{output}/sheet.png"}}, options, 2).ok());
    const std::string first = read_text(out / "sheet.png");
    QVERIFY(run_writer("PreviewVideo", {{"contact_sheet", "{output}/sheet.png"}}, options, 3).ok());
    QCOMPARE(read_text(out / "sheet.png"), first);
    QVERIFY(fs::exists(out / "sheet_00002.png"));
    QVERIFY(read_text(out / "sheet_00002.png") != first);
  }

  void exportOverwriteNeverDeletesAFolder_data() {
    QTest::addColumn<QString>("format");
    QTest::newRow("mp4") << "mp4";
    QTest::newRow("webm") << "webm";
    QTest::newRow("png sequence") << "png";
  }

  void exportOverwriteNeverDeletesAFolder() {
    QFETCH(QString, format);
    QTemporaryDir tmp;
    const fs::path victim = make_victim(fs::path(tmp.path().toStdString()) / "album");
    const nlohmann::json params = {{"filename", victim.parent_path().string()},
                                   {"format", format.toStdString()}, {"naming", "overwrite"}};
    auto result = run_writer("ExportVideo", params);
    QVERIFY(!result.ok());
    QCOMPARE(read_text(victim), std::string("precious"));
    QCOMPARE(entries(victim.parent_path()), std::size_t(1));
    engine::RunOptions forced;
    forced.overwrite = true;  // --overwrite
    QVERIFY(!run_writer("ExportVideo", params, forced).ok());
    QCOMPARE(read_text(victim), std::string("precious"));
  }

  void pngSequenceBesideAnUnrelatedFolder() {
    QTemporaryDir tmp;
    const fs::path victim = make_victim(fs::path(tmp.path().toStdString()) / "frames");
    auto result = run_writer("ExportVideo", {{"filename", victim.parent_path().string()}, {"format", "png"}});
    QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
    QCOMPARE(read_text(victim), std::string("precious"));
    QCOMPARE(entries(victim.parent_path()), std::size_t(1));
    const fs::path written = fs::path(tmp.path().toStdString()) / "frames_00002";
    QVERIFY(fs::exists(written / "frame_000001.png"));
    QCOMPARE(engine::value_as<std::string>(result.value().at("path")) != nullptr, true);
    QCOMPARE(*engine::value_as<std::string>(result.value().at("path")), written.string());
  }

  void pngSequenceOverwriteReplacesOnlyItsOwnFolder() {
    QTemporaryDir tmp;
    const fs::path seq = fs::path(tmp.path().toStdString()) / "seq";
    const nlohmann::json params = {{"filename", seq.string()}, {"format", "png"}, {"naming", "overwrite"}};
    QVERIFY(run_writer("ExportVideo", params, {}, 3).ok());
    QCOMPARE(entries(seq), std::size_t(4));  // 3 frames + metadata.json
    QVERIFY(run_writer("ExportVideo", params, {}, 2).ok());
    QCOMPARE(entries(seq), std::size_t(3));
    QCOMPARE(entries(seq.parent_path()), std::size_t(1));  // the old frames went, nothing else left
    // A file the writer never makes inside it: the folder is not the writer's any more.
    write_text(seq / "notes.txt", "mine");
    QVERIFY(!run_writer("ExportVideo", params, {}, 2).ok());
    QCOMPARE(read_text(seq / "notes.txt"), std::string("mine"));
  }

  void specialFilesAreNeverReplaced() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    const fs::path fifo = dir / "pipe.mp4";
    QCOMPARE(::mkfifo(fifo.c_str(), 0644), 0);
    const fs::path link = dir / "link.mp4";
    const fs::path target = dir / "target.mp4";
    write_text(target, "linked");
    fs::create_symlink(target, link);
    std::vector<fs::path> victims = {fifo, link};
    const fs::path device = dir / "null.mp4";
    if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) victims.push_back(device);
    engine::RunOptions forced;
    forced.overwrite = true;
    for (const fs::path& victim : victims) {
      struct stat before {};
      QCOMPARE(::lstat(victim.c_str(), &before), 0);
      auto result = run_writer("ExportVideo", {{"filename", victim.string()}, {"naming", "overwrite"}}, forced);
      QVERIFY2(!result.ok(), victim.c_str());
      QVERIFY2(result.error().message.find("left untouched") != std::string::npos, result.error().message.c_str());
      struct stat after {};
      QCOMPARE(::lstat(victim.c_str(), &after), 0);
      QCOMPARE(after.st_mode & S_IFMT, before.st_mode & S_IFMT);
      QCOMPARE(after.st_ino, before.st_ino);
    }
    QCOMPARE(read_text(target), std::string("linked"));
  }

  // Writers write regular files in real folders: /dev/full became /dev/full_00002 (exit 0) before.
  void systemPathsAreRefused_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("/dev/full") << "/dev/full" << "inside /dev";
    QTest::newRow("/dev/null, in a subfolder") << "/dev/shm/../null" << "inside /dev";
    QTest::newRow("/proc/x") << "/proc/x.mp4" << "inside /proc";
    QTest::newRow("/sys/x") << "/sys/x.mp4" << "inside /sys";
  }
  void systemPathsAreRefused() {
    QFETCH(QString, path);
    QFETCH(QString, fragment);
    const std::string file = path.toStdString();
    for (const char* naming : {"increment", "fail", "overwrite"}) {
      auto result = run_writer("ExportVideo", {{"filename", file}, {"naming", naming}});
      QVERIFY2(!result.ok(), naming);
      QVERIFY2(result.error().message.find(fragment.toStdString()) != std::string::npos,
               result.error().message.c_str());
    }
    QTemporaryDir tmp;
    engine::Engine engine(registry_);
    const auto latent = engine.run(latent_graph(tmp.path().toStdString(), file, "increment"), {});
    QVERIFY(latent.status != engine::RunStatus::Succeeded);
    QCOMPARE(latent.errors.size(), std::size_t(1));
    QVERIFY2(latent.errors[0].message.find(fragment.toStdString()) != std::string::npos,
             latent.errors[0].message.c_str());
    const fs::path p = fs::path(file).lexically_normal();
    QVERIFY(!fs::exists(p.parent_path() / (p.stem().string() + "_00002" + p.extension().string())));
    QVERIFY(!fs::exists(p.parent_path() / (p.stem().string() + "_00002.mp4")));
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(p.parent_path(), ec)) {  // no temporaries left
      QVERIFY2(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path().c_str());
    }
  }

  // A link into /dev, a file used as a folder, and a FIFO at the target are refused the same way,
  // and a FIFO never makes Increment take the next name.
  void outputsAreRegularFilesInRealFolders() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    fs::create_symlink("/dev/full", dir / "full.mp4");
    auto linked = run_writer("ExportVideo", {{"filename", (dir / "full.mp4").string()}});
    QVERIFY(!linked.ok());
    QVERIFY2(linked.error().message.find("inside /dev") != std::string::npos, linked.error().message.c_str());
    write_text(dir / "notes.txt", "mine");
    auto under_file = run_writer("ExportVideo", {{"filename", (dir / "notes.txt" / "out.mp4").string()}});
    QVERIFY(!under_file.ok());
    QVERIFY2(under_file.error().message.find("which is not a folder") != std::string::npos,
             under_file.error().message.c_str());
    QCOMPARE(read_text(dir / "notes.txt"), std::string("mine"));
    const fs::path fifo = dir / "pipe.mp4";
    QCOMPARE(::mkfifo(fifo.c_str(), 0644), 0);
    auto piped = run_writer("ExportVideo", {{"filename", fifo.string()}});
    QVERIFY(!piped.ok());
    QVERIFY2(piped.error().message.find("a FIFO") != std::string::npos, piped.error().message.c_str());
    // The publish step itself, for a FIFO that appears after the checks: an error, not a new name.
    const std::string temp = temporary_sibling(fifo.string());
    write_text(temp, "data");
    const Published published = publish_output(temp, {fifo.string(), Naming::Increment, OutputKind::Mp4});
    QVERIFY(!published.error.empty());
    QVERIFY(!fs::exists(dir / "pipe_00002.mp4"));
    remove_temporary(temp);
    QCOMPARE(entries(dir), std::size_t(3));  // full.mp4, notes.txt, pipe.mp4
  }

  void overwriteReplacesOnlyOutputsOfItsKind() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    write_text(dir / "notes.mp4", "not a video");
    auto refused = run_writer("ExportVideo", {{"filename", (dir / "notes.mp4").string()}, {"naming", "overwrite"}});
    QVERIFY(!refused.ok());
    QCOMPARE(read_text(dir / "notes.mp4"), std::string("not a video"));
    // A WebM is not an MP4 either.
    QVERIFY(run_writer("ExportVideo", {{"filename", (dir / "a.webm").string()}, {"format", "webm"}}).ok());
    QVERIFY(!run_writer("ExportVideo", {{"filename", (dir / "a.webm").string()}, {"naming", "overwrite"}}).ok());
    // Its own earlier MP4 is replaced.
    const nlohmann::json mp4 = {{"filename", (dir / "clip.mp4").string()}, {"naming", "overwrite"}};
    QVERIFY(run_writer("ExportVideo", mp4, {}, 2).ok());
    const auto size = fs::file_size(dir / "clip.mp4");
    QVERIFY(run_writer("ExportVideo", mp4, {}, 8).ok());
    QVERIFY(fs::file_size(dir / "clip.mp4") != size);
    QCOMPARE(entries(dir), std::size_t(3));
  }

  void incrementKeepsEveryRun() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    const nlohmann::json params = {{"filename", (dir / "demo.mp4").string()}};
    QVERIFY(run_writer("ExportVideo", params, {}, 2).ok());
    const std::string first = read_text(dir / "demo.mp4");
    auto second = run_writer("ExportVideo", params, {}, 3);
    QVERIFY(second.ok());
    QCOMPARE(*engine::value_as<std::string>(second.value().at("path")), (dir / "demo_00002.mp4").string());
    QVERIFY(run_writer("ExportVideo", params, {}, 4).ok());
    QCOMPARE(read_text(dir / "demo.mp4"), first);
    QVERIFY(fs::exists(dir / "demo_00003.mp4"));
  }

  void failPolicyIsFoundBeforeAnyNodeRuns() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    write_text(dir / "taken.safetensors", "someone else's");
    engine::Engine engine(registry_);
    std::vector<std::string> started;
    engine.events().subscribe([&](const engine::Event& e) {
      if (e.kind == engine::EventKind::NodeStarted) started.push_back(e.node_id);
    });
    engine::RunRequest request;
    request.options.output_dir = dir.string();
    auto result = engine.run(latent_graph(dir, "{output}/taken.safetensors", "fail"), request);
    QCOMPARE(result.status, engine::RunStatus::Invalid);
    QVERIFY(started.empty());
    QCOMPARE(result.errors.size(), std::size_t(1));
    QCOMPARE(result.errors[0].node_id, std::string("save"));
    const std::string& message = result.errors[0].message;
    QVERIFY2(message.find((dir / "taken.safetensors").string()) != std::string::npos, message.c_str());
    QVERIFY2(message.find("--overwrite") != std::string::npos, message.c_str());
    QVERIFY2(message.find("another name") != std::string::npos, message.c_str());
    QCOMPARE(read_text(dir / "taken.safetensors"), std::string("someone else's"));
    // A fresh name runs; running the unchanged graph again is served from the cache, no conflict.
    const engine::GraphDocument fresh = latent_graph(dir, "{output}/mine.safetensors", "fail");
    QCOMPARE(engine.run(fresh, request).status, engine::RunStatus::Succeeded);
    QCOMPARE(engine.run(fresh, request).status, engine::RunStatus::Succeeded);
  }

  void outputPatternsStayInsideTheOutputFolder_data() {
    QTest::addColumn<QString>("filename");
    QTest::addColumn<bool>("valid");
    QTest::newRow("inside") << "{output}/a/../latent.safetensors" << true;
    QTest::newRow("parent") << "{output}/.." << false;
    QTest::newRow("escape") << "{output}/../latent.safetensors" << false;
    QTest::newRow("deep escape") << "{output}/a/../../x.safetensors" << false;
    QTest::newRow("the folder itself") << "{output}" << false;
    QTest::newRow("the folder itself, slash") << "{output}/" << false;
  }

  void outputPatternsStayInsideTheOutputFolder() {
    QFETCH(QString, filename);
    QFETCH(bool, valid);
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    fs::create_directories(dir / "out" / "a");
    const fs::path victim = make_victim(dir / "keep");
    engine::Engine engine(registry_);
    engine::RunRequest request;
    request.options.output_dir = (dir / "out").string();
    request.options.overwrite = true;
    auto result = engine.run(latent_graph(dir, filename.toStdString(), "overwrite"), request);
    QCOMPARE(result.status, valid ? engine::RunStatus::Succeeded : engine::RunStatus::Invalid);
    if (!valid) {
      QVERIFY2(result.errors.at(0).message.find("output folder") != std::string::npos,
               result.errors.at(0).message.c_str());
    }
    QCOMPARE(read_text(victim), std::string("precious"));
    QCOMPARE(entries(dir), std::size_t(3));  // source.safetensors, keep/, out/
  }

  // Every place a built-in node writes or creates is marked (ParamSpec::writes), so that the rule
  // for a workflow from a shared file covers them all: each path param whose default lies in the
  // output folder, and the writers whose default is empty.
  void everyWritePlaceIsMarked() {
    int marked = 0;
    for (const engine::NodeType* t : registry_.list()) {
      for (const engine::ParamSpec& p : t->params) {
        const bool path = p.kind == engine::ParamKind::FilePath || p.kind == engine::ParamKind::FolderPath;
        const bool in_output =
            p.default_value.is_string() && p.default_value.get<std::string>().rfind("{output}", 0) == 0;
        if (path && in_output) QVERIFY2(p.writes, (t->name + "." + p.name).c_str());
        marked += p.writes ? 1 : 0;
      }
    }
    QVERIFY(type("PreviewVideo").find_param("contact_sheet")->writes);
    QVERIFY(marked >= 5);
  }

  // A shared workflow's writer and folder-maker outside the output folder (absolute, or "{output}/"
  // through a link) are refused before any node runs; nothing is written; unconfined, they run.
  void sharedWorkflowWritesOnlyInsideTheOutputFolder() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    fs::create_directories(dir / "out");
    fs::create_directories(dir / "elsewhere");
    fs::create_directory_symlink(dir / "elsewhere", dir / "out" / "link");
    engine::Engine engine(registry_);
    std::vector<std::string> started;
    engine.events().subscribe([&](const engine::Event& e) {
      if (e.kind == engine::EventKind::NodeStarted) started.push_back(e.node_id);
    });
    engine::RunRequest request;
    request.options.output_dir = (dir / "out").string();
    request.options.confine_writes_to_output_dir = true;
    engine::GraphDocument doc = latent_graph(dir, (dir / "elsewhere" / "x.safetensors").string(), "increment");
    // Make Demo Dataset is not linked to anything: run it too, not only what the saver needs.
    QVERIFY(doc.add_node(engine::Node{"demo", "MakeDemoDataset", 1, {{"folder", "{output}/link/clips"}}, {}, {}}).ok());
    auto refused = engine.run(doc, request);
    QCOMPARE(refused.status, engine::RunStatus::Invalid);
    QVERIFY(started.empty());
    QCOMPARE(refused.errors.size(), std::size_t(2));
    for (const auto& e : refused.errors) {
      QVERIFY2(e.message.find("outside the output folder") != std::string::npos, e.message.c_str());
    }
    QVERIFY(fs::is_empty(dir / "elsewhere"));
    request.options.confine_writes_to_output_dir = false;
    const std::string outside = (dir / "elsewhere" / "x.safetensors").string();
    QCOMPARE(engine.run(latent_graph(dir, outside, "increment"), request).status, engine::RunStatus::Succeeded);
    QVERIFY(fs::exists(dir / "elsewhere" / "x.safetensors"));
  }

  void concurrentWritersNeverReplaceEachOther() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    constexpr int kProcesses = 4;
    constexpr int kFilesEach = 25;
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
      const pid_t child = ::fork();
      if (child == 0) {
        for (int i = 0; i < kFilesEach; ++i) {
          const std::string text = "{\"writer\": " + std::to_string(p * 1000 + i) + "}";
          const Published out = write_file_atomically({(dir / "run.json").string(), Naming::Increment, OutputKind::Json},
                                                      text.data(), text.size());
          if (!out.error.empty()) ::_exit(1);
        }
        ::_exit(0);
      }
      children.push_back(child);
    }
    for (pid_t child : children) {
      int status = 0;
      ::waitpid(child, &status, 0);
      QVERIFY(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    std::set<std::string> contents;
    for (const auto& entry : fs::directory_iterator(dir)) contents.insert(read_text(entry.path()));
    QCOMPARE(entries(dir), std::size_t(kProcesses * kFilesEach));
    QCOMPARE(contents.size(), std::size_t(kProcesses * kFilesEach));
  }

  void publishRefusesWhatAppearedMeanwhile_data() {
    QTest::addColumn<bool>("fallback");
    QTest::newRow("renameat2") << false;
    QTest::newRow("link and mkdir fallback") << true;
  }

  void publishRefusesWhatAppearedMeanwhile() {
    QFETCH(bool, fallback);
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    write_text(dir / "temp", "new");
    write_text(dir / "taken", "old");
    QCOMPARE(move_no_replace((dir / "temp").string(), (dir / "taken").string(), fallback), EEXIST);
    QCOMPARE(read_text(dir / "taken"), std::string("old"));
    QCOMPARE(move_no_replace((dir / "temp").string(), (dir / "free").string(), fallback), 0);
    QCOMPARE(read_text(dir / "free"), std::string("new"));
    QVERIFY(!fs::exists(dir / "temp"));
    // Folders: an existing (even empty) folder is never replaced.
    fs::create_directory(dir / "tempdir");
    write_text(dir / "tempdir" / "frame_000001.png", "f");
    fs::create_directory(dir / "empty");
    QVERIFY(move_no_replace((dir / "tempdir").string(), (dir / "empty").string(), fallback) != 0);
    QVERIFY(fs::is_empty(dir / "empty"));
    QCOMPARE(move_no_replace((dir / "tempdir").string(), (dir / "seq").string(), fallback), 0);
    QVERIFY(fs::exists(dir / "seq" / "frame_000001.png"));
    // The writer's own publish under `fail`, when the target appeared after its check.
    write_text(dir / "late.tmp", "mine");
    write_text(dir / "late.json", "{}");
    const Published out = publish_output((dir / "late.tmp").string(), {(dir / "late.json").string(), Naming::Fail, OutputKind::Json});
    QVERIFY(out.error.find("already exists") != std::string::npos);
    QCOMPARE(read_text(dir / "late.json"), std::string("{}"));
  }

  void staleTemporariesOfDeadWritersAreRemoved() {
    QTemporaryDir tmp;
    const fs::path dir(tmp.path().toStdString());
    const std::string dead = std::to_string(dead_pid());
    const fs::path stale_file = dir / (".demo.mp4.tmp-" + dead + "-0");
    const fs::path stale_folder = dir / (".demo.mp4.tmp-" + dead + "-1");
    const fs::path alive = dir / ".demo.mp4.tmp-1-0";  // pid 1 always runs
    const fs::path other = dir / (".other.mp4.tmp-" + dead + "-0");
    const fs::path odd_folder = dir / (".demo.mp4.tmp-" + dead + "-2");
    write_text(stale_file, "partial");
    fs::create_directory(stale_folder);
    write_text(stale_folder / "frame_000001.png", "partial");
    write_text(alive, "in progress");
    write_text(other, "another writer's");
    fs::create_directory(odd_folder);
    write_text(odd_folder / "notes.txt", "not a writer's");
    QVERIFY(run_writer("ExportVideo", {{"filename", (dir / "demo.mp4").string()}}).ok());
    QVERIFY(!fs::exists(stale_file));
    QVERIFY(!fs::exists(stale_folder));
    QVERIFY(fs::exists(alive));
    QVERIFY(fs::exists(other));
    QCOMPARE(read_text(odd_folder / "notes.txt"), std::string("not a writer's"));
    QVERIFY(fs::exists(dir / "demo.mp4"));
  }
};

QTEST_GUILESS_MAIN(tst_outputs)
#include "tst_outputs.moc"
