// End-to-end tests of the main job on the demo workflow (tiny generated Wan2.2 model, sample image):
// the MP4 decodes back with the expected frames, size, fps and embedded workflow; a changed param
// re-runs only the downstream nodes (in-process, and across the runs of one `vidgraph-run --sweep`
// through its --json-events); Ctrl-C during sampling exits 130 with no partial output (single run and
// sweep); bad inputs and outputs are clear errors with exit code 3; the sampler posts one live
// preview per step, saved as PNGs of half the video's size with --previews.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <QtCore/QProcess>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/workflow_file.h"
#include "nodes/demo/random_model.h"
#include "nodes/media/image_io.h"
#include "nodes/media/video_probe.h"
#include "nodes/session.h"
#include "models/io/safetensors.h"
#include "models/wan/wan_tiny.h"
#include "process_run.h"
#include "taehv_test_weights.h"

namespace fs = std::filesystem;
using namespace vidgraph;
namespace media = vidgraph::nodes::media;

namespace {

const QString kBinary = QStringLiteral(VIDGRAPH_BINARY_DIR);
const QString kRunner = kBinary + "/bin/vidgraph-run";
const QString kDemo = kBinary + "/share/vidgraph/workflows/demo.vgflow";

using RunOutcome = test_common::ProcessOutcome;

// Runs vidgraph-run with `args`; quick settings keep the error cases fast.
RunOutcome run_runner(const QStringList& args, int timeout_ms = 240000) {
  return test_common::run_process(kRunner, args, timeout_ms);
}

QStringList quick() {
  return {"--set", "sampler.steps=2", "--set", "sampler.frames=5"};
}

// The names in `dir`, sorted.
std::vector<std::string> files_in(const QString& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.toStdString())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// Every file and folder under `dir`, relative, sorted.
std::vector<std::string> tree_of(const QString& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir.toStdString())) {
    names.push_back(fs::relative(e.path(), dir.toStdString()).generic_string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<nlohmann::json> json_lines(const QString& text) {
  std::vector<nlohmann::json> lines;
  for (const QString& line : text.split('\n', Qt::SkipEmptyParts)) {
    lines.push_back(nlohmann::json::parse(line.toStdString(), nullptr, false));
  }
  return lines;
}

// Reads `process`'s JSON events until one matches `seen_event` (or 240 s pass, or it exits), then
// sends SIGINT as Ctrl-C would. Returns whether the event was seen; `seen` gets the stdout read.
bool interrupt_after(QProcess& process, const std::function<bool(const nlohmann::json&)>& seen_event,
                     QString& seen) {
  bool found = false;
  QElapsedTimer timer;
  timer.start();
  while (!found && timer.elapsed() < 240000 && process.state() == QProcess::Running) {
    process.waitForReadyRead(200);
    seen += QString::fromUtf8(process.readAllStandardOutput());
    for (const auto& e : json_lines(seen)) found = found || (e.is_object() && seen_event(e));
  }
  if (found) ::kill(static_cast<pid_t>(process.processId()), SIGINT);
  return found;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

class tst_e2e : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void demoWritesMp4();
  void fastWorkflowRuns();
  void a14bWorkflowRuns_data();
  void a14bWorkflowRuns();
  void a14bLightningWorkflowRuns_data();
  void a14bLightningWorkflowRuns();
  void previewsPerStep();
  void lightVaePreviewsOnTheDemo();
  void changedParamRerunsDownstream();
  void cancelDuringSampling();
  void sweepRerunsOnlyDownstream();
  void sweepCancelLeavesNoPartialFiles();
  void errorsExitWithTheirCode_data();
  void errorsExitWithTheirCode();
  void existingOutputIsKept();
  void framesStepThroughSet();
  void runFromItsOutput();
};

void tst_e2e::initTestCase() {
  QVERIFY2(QFile::exists(kRunner), qPrintable(kRunner + " is not built"));
  QVERIFY2(QFile::exists(kDemo), qPrintable(kDemo + " is not staged"));
  QVERIFY2(fs::exists(kBinary.toStdString() + "/share/vidgraph/models/wan22-tiny/spiece.model"),
           "the tiny demo model was not generated");
}

void tst_e2e::demoWritesMp4() {
  QTemporaryDir out;
  const RunOutcome r = run_runner({"run", kDemo, "--output-dir", out.path()});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  const std::string mp4 = out.filePath("demo.mp4").toStdString();
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(mp4, &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 25);
  QCOMPARE(info.width, 160);
  QCOMPARE(info.height, 96);
  QCOMPARE(info.fps, 24.0);
  QCOMPARE(info.codec, std::string("h264"));
  const auto workflow = nlohmann::json::parse(info.metadata["comment"], nullptr, false);
  QVERIFY2(workflow.is_object(), "the MP4 carries the workflow JSON");
  QCOMPARE(workflow.value("format", std::string()), std::string("vidgraph-workflow"));
  std::set<std::string> ids;
  for (const auto& n : workflow["nodes"]) ids.insert(n.value("id", std::string()));
  QVERIFY(ids.count("sampler") && ids.count("export") && ids.count("image"));
  // Only the video and the run's history remain in the output folder: no temporary files.
  QCOMPARE(files_in(out.path()), (std::vector<std::string>{"demo.mp4", "vidgraph-history.jsonl"}));
}

// The shipped FastWan workflow (DMD, 3 steps, guidance 1) on the tiny demo model, text-to-video.
void tst_e2e::fastWorkflowRuns() {
  QTemporaryDir out;
  const QString flow = kBinary + "/share/vidgraph/workflows/wan22-ti2v-5b-fast.vgflow";
  const RunOutcome r = run_runner({"run", flow, "--output-dir", out.path(), "--json-events",
                                   "--set", "model.model_path={resources}/models/wan22-tiny",
                                   "--set", "model.device=cpu", "--set", "model.dtype=float32",
                                   "--set", "sampler.width=160", "--set", "sampler.height=96",
                                   "--set", "sampler.frames=5"});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  int sampler_steps = 0, step_previews = 0;
  for (const auto& e : json_lines(r.out)) {
    if (e.is_object() && e.value("event", "") == "node_progress" && e.value("node", "") == "sampler") {
      sampler_steps = e.value("max", 0);
    }
    if (e.is_object() && e.value("event", "") == "preview" && e.contains("step")) {
      ++step_previews;
      QVERIFY2(!e.contains("path"), "without --previews no preview file is written");
    }
  }
  QCOMPARE(sampler_steps, 3);
  QCOMPARE(step_previews, 3);
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(out.filePath("wan22-ti2v-5b-fast.mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 5);
  QCOMPARE(info.width, 160);
  QCOMPARE(info.height, 96);
}

// The shipped Wan2.2-A14B workflows (T2V; I2V with the sample image) and the Wan2.1 T2V one on tiny
// random models in the releases' layouts (high_noise_model/ and low_noise_model/, or one DiT; and
// Wan2.1_VAE.safetensors): one Load Wan Model gives both experts where there are two, the sampler
// switches between them, and the Wan2.1 VAE decodes the 16-channel latent.
void tst_e2e::a14bWorkflowRuns_data() {
  QTest::addColumn<QString>("config");
  QTest::addColumn<QString>("name");      // the shipped workflow
  QTest::addColumn<QStringList>("sets");  // the size: the sampler's for T2V, Load Image's for I2V
  QTest::newRow("t2v") << "a14b-t2v" << "wan22-a14b-t2v" << QStringList{"sampler.width=160", "sampler.height=96"};
  QTest::newRow("i2v") << "a14b-i2v" << "wan22-a14b-i2v" << QStringList{"image.width=160", "image.height=96"};
  // First-last-frame: the same model, a second Load Image as the sampler's last_image.
  QTest::newRow("flf2v") << "a14b-i2v" << "wan22-a14b-flf2v"
                         << QStringList{"image.width=160", "image.height=96", "last_image.width=160",
                                        "last_image.height=96"};
  // Wan2.1 T2V: one DiT (no partner), the Wan2.1 VAE picked from the folder.
  QTest::newRow("wan21") << "wan21-1.3b" << "wan21-t2v" << QStringList{"sampler.width=160", "sampler.height=96"};
}

void tst_e2e::a14bWorkflowRuns() {
  QFETCH(QString, config);
  QFETCH(QString, name);
  QFETCH(QStringList, sets);
  QTemporaryDir out, model;
  nodes::RandomModelOptions options;
  options.config = config.toStdString();
  options.tiny = true;
  options.tokenizer = kBinary.toStdString() + "/share/vidgraph/models/wan22-tiny/spiece.model";
  nodes::write_random_model(model.path().toStdString(), options);
  const bool two_experts_expected = config.startsWith("a14b");
  QStringList args{"run", kBinary + "/share/vidgraph/workflows/" + name + ".vgflow", "--output-dir", out.path(),
                   "--json-events", "--set", "model.model_path=" + model.path(), "--set", "model.device=cpu",
                   "--set", "model.dtype=float32", "--set", "sampler.frames=5", "--set", "sampler.steps=4"};
  for (const QString& set : sets) args << "--set" << set;
  const RunOutcome r = run_runner(args);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  bool two_experts = false;
  for (const auto& e : json_lines(r.out)) {
    const std::string message = e.is_object() ? e.value("message", "") : "";
    if (message.find("Two experts") != std::string::npos) {
      two_experts = message.find("high_noise_model") != std::string::npos &&
                    message.find("low_noise_model") != std::string::npos;
    }
  }
  QVERIFY2(two_experts == two_experts_expected, qPrintable("the sampler's experts:\n" + r.out));
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(out.filePath(name + ".mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 5);
  QCOMPARE(info.width, 160);
  QCOMPARE(info.height, 96);
  QCOMPARE(info.fps, 16.0);
}

// The shipped 4-step Lightning workflows (T2V; I2V with the sample image): one LoRA per expert
// (written here in ComfyUI's names for the tiny DiT), guidance 1, Euler; the log says which file went
// to which expert.
void tst_e2e::a14bLightningWorkflowRuns_data() {
  QTest::addColumn<QString>("config");
  QTest::addColumn<QStringList>("sets");  // the size: the sampler's for T2V, Load Image's for I2V
  QTest::newRow("t2v") << "a14b-t2v" << QStringList{"sampler.width=160", "sampler.height=96"};
  QTest::newRow("i2v") << "a14b-i2v" << QStringList{"image.width=160", "image.height=96"};
}

void tst_e2e::a14bLightningWorkflowRuns() {
  QFETCH(QString, config);
  QFETCH(QStringList, sets);
  QTemporaryDir out, model;
  nodes::RandomModelOptions options;
  options.config = config.toStdString();
  options.tiny = true;
  options.tokenizer = kBinary.toStdString() + "/share/vidgraph/models/wan22-tiny/spiece.model";
  nodes::write_random_model(model.path().toStdString(), options);
  const int64_t dim = wan::wan_tiny_config().dim, rank = 2;
  auto write_lora = [&](const QString& name) {
    const std::string path = model.filePath(name).toStdString();
    const std::string key = "diffusion_model.blocks.0.self_attn.q.";
    model_io::save_safetensors(path, {{key + "lora_down.weight", at::randn({rank, dim}) * 0.1},
                                      {key + "lora_up.weight", at::randn({dim, rank}) * 0.1}});
    return QString::fromStdString(path);
  };
  const QString high = write_lora("lightning_high_noise.safetensors");
  const QString low = write_lora("lightning_low_noise.safetensors");
  const QString name = "wan22-" + config + "-lightning";
  QStringList args{"run", kBinary + "/share/vidgraph/workflows/" + name + ".vgflow", "--output-dir", out.path(),
                   "--json-events", "--set", "model.model_path=" + model.path(), "--set", "model.device=cpu",
                   "--set", "model.dtype=float32", "--set", "lora_high.path=" + high,
                   "--set", "lora_low.path=" + low, "--set", "sampler.frames=5"};
  for (const QString& set : sets) args << "--set" << set;
  const RunOutcome r = run_runner(args);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  std::map<std::string, std::string> lora_of;  // node id -> the LoRA message it logged
  int sampler_steps = 0;
  for (const auto& e : json_lines(r.out)) {
    if (!e.is_object()) continue;
    const std::string node = e.value("node", "");
    if (e.value("message", "").find("LoRA '") != std::string::npos) lora_of[node] = e.value("message", "");
    if (e.value("event", "") == "node_progress" && node == "sampler") sampler_steps = e.value("max", 0);
  }
  QVERIFY2(lora_of["lora_high"].find("lightning_high_noise.safetensors' on the high-noise expert") != std::string::npos,
           qPrintable(r.out));
  QVERIFY2(lora_of["lora_low"].find("lightning_low_noise.safetensors' on the low-noise expert") != std::string::npos,
           qPrintable(r.out));
  QCOMPARE(sampler_steps, 4);
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(out.filePath(name + ".mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 5);
  QCOMPARE(info.width, 160);
}

// --previews DIR: one preview event per sampler step (steps 1..N in order), each naming a new PNG in
// DIR of half the video's size; nothing else lands in DIR, and the sampler logs what they cost.
void tst_e2e::previewsPerStep() {
  QTemporaryDir out, previews;
  const QString dir = previews.filePath("step-previews");  // created by the runner
  const QString flow = kBinary + "/share/vidgraph/workflows/wan22-ti2v-5b-fast.vgflow";
  const RunOutcome r = run_runner({"run", flow, "--output-dir", out.path(), "--json-events", "--previews", dir,
                                   "--set", "model.model_path={resources}/models/wan22-tiny",
                                   "--set", "model.device=cpu", "--set", "model.dtype=float32",
                                   "--set", "sampler.width=160", "--set", "sampler.height=96",
                                   "--set", "sampler.frames=5", "--set", "sampler.dmd_timesteps=1000,800,600,400"});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  std::vector<int> steps;
  std::set<std::string> paths;
  bool cost_logged = false;
  for (const auto& e : json_lines(r.out)) {
    if (!e.is_object()) continue;
    const std::string message = e.value("message", "");
    cost_logged = cost_logged || message.rfind("Live previews (latent): 4 at ", 0) == 0;
    if (e.value("event", "") != "preview" || e.value("node", "") != "sampler") continue;
    QCOMPARE(e.value("steps", 0), 4);
    QCOMPARE(e.value("value_type", ""), std::string("VIDEO"));
    steps.push_back(e.value("step", 0));
    const std::string path = e.value("path", "");
    QVERIFY2(fs::path(path).parent_path() == fs::path(dir.toStdString()), path.c_str());
    nodes::Image image;
    std::string error;
    QVERIFY2(media::load_image(path, &image, &error), error.c_str());
    QCOMPARE(image.width, 80);
    QCOMPARE(image.height, 48);
    paths.insert(fs::path(path).filename().string());
  }
  QCOMPARE(steps, (std::vector<int>{1, 2, 3, 4}));
  QCOMPARE(paths, (std::set<std::string>{"sampler_step001.png", "sampler_step002.png", "sampler_step003.png",
                                         "sampler_step004.png"}));
  QCOMPARE(files_in(dir).size(), std::size_t(4));
  QVERIFY2(cost_logged, qPrintable(r.out));
  // preview light_vae without its file: the sampler fails with a sentence naming preview_vae.
  const RunOutcome bad = run_runner({"run", flow, "--output-dir", out.path(), "--set",
                                     "model.model_path={resources}/models/wan22-tiny", "--set", "model.device=cpu",
                                     "--set", "sampler.width=160", "--set", "sampler.height=96", "--set",
                                     "sampler.frames=5", "--set", "sampler.preview=light_vae"});
  QCOMPARE(bad.exit_code, 3);
  QVERIFY2(bad.err.contains("preview_vae") || bad.out.contains("preview_vae"), qPrintable(bad.out + bad.err));
}

// preview light_vae on the shipped demo (48 latent channels, as TAEHV's): a taew2_2 file at the
// real widths (random weights: the picture is noise, the cost is real). With the default budget the
// light decodes stay within 5% of the sampling time (on the demo, whose DiT is tiny, a decode costs
// most of a step, so most steps or all get the latent projection); with preview_budget 100 every
// step is decoded. Every step posts a preview either way, and the sampler logs the split.
void tst_e2e::lightVaePreviewsOnTheDemo() {
  QTemporaryDir out, previews;
  const std::string taehv = out.filePath("taew2_2.safetensors").toStdString();
  model_io::save_safetensors(taehv, test::taew2_2_weights(3));
  auto run = [&](const QString& budget, int* steps, std::string* cost) {
    const QString dir = previews.filePath("light" + budget);
    const RunOutcome r = run_runner({"run", kDemo, "--output-dir", out.path(), "--overwrite", "--json-events",
                                     "--previews", dir, "--set", "sampler.preview=light_vae", "--set",
                                     "sampler.preview_vae=" + QString::fromStdString(taehv), "--set",
                                     "sampler.preview_budget=" + budget});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    int previews_seen = 0;
    for (const auto& e : json_lines(r.out)) {
      if (!e.is_object()) continue;
      const std::string message = e.value("message", "");
      if (message.rfind("Live previews (light_vae): ", 0) == 0) *cost = message;
      if (e.value("event", "") != "preview" || e.value("node", "") != "sampler") continue;
      ++previews_seen;
      *steps = e.value("steps", 0);
      nodes::Image image;
      std::string error;
      QVERIFY2(media::load_image(e.value("path", ""), &image, &error), error.c_str());
      QCOMPARE(image.width, 80);  // half the demo's 160x96
      QCOMPARE(image.height, 48);
    }
    QVERIFY(*steps > 0);
    QCOMPARE(previews_seen, *steps);
    qInfo("preview_budget %s: %s", qPrintable(budget), cost->c_str());
  };
  int steps = 0;
  std::string cost;
  run("5", &steps, &cost);
  std::smatch share;
  QVERIFY2(std::regex_search(cost, share, std::regex(R"(; ([0-9.]+)% of the sampling time, budget 5%)")), cost.c_str());
  QVERIFY2(std::stod(share[1].str()) <= 5.5, cost.c_str());
  run("100", &steps, &cost);
  const std::string all = std::to_string(steps);
  QVERIFY2(cost.rfind("Live previews (light_vae): " + all + " of " + all + " decoded", 0) == 0, cost.c_str());
}

void tst_e2e::changedParamRerunsDownstream() {
  nodes::Session session;
  const engine::Registry& registry = session.registry();
  auto loaded = engine::load_workflow_file(kDemo.toStdString(), {&registry, nullptr});
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  QTemporaryDir out;
  engine::Engine engine(registry, session.engine_config());
  std::map<std::string, std::string> outcome;  // node id -> "cached" / "started"
  engine.events().subscribe([&outcome](const engine::Event& e) {
    if (e.kind == engine::EventKind::NodeCached) outcome[e.node_id] = "cached";
    if (e.kind == engine::EventKind::NodeStarted) outcome[e.node_id] = "started";
  });
  auto request = [&](std::vector<std::string> overrides) {
    engine::RunRequest r;
    r.overrides = std::move(overrides);
    r.overrides.push_back("sampler.steps=2");
    r.options.output_dir = out.path().toStdString();
    r.options.workflow_dir = fs::path(kDemo.toStdString()).parent_path();
    r.options.overwrite = true;
    r.keep_outputs = false;
    return r;
  };
  auto first = engine.run(loaded->document, request({}));
  QVERIFY2(first.status == engine::RunStatus::Succeeded,
           first.errors.empty() ? "" : first.errors[0].to_string().c_str());
  for (const auto& [id, what] : outcome) QVERIFY2(what == "started", id.c_str());
  outcome.clear();
  auto second = engine.run(loaded->document, request({"sampler.seed=7"}));
  QVERIFY(second.status == engine::RunStatus::Succeeded);
  const std::map<std::string, std::string> expected = {
      {"image", "cached"},     {"prompt", "cached"},     {"model", "cached"},
      {"encode", "cached"},    {"sampler", "started"},   {"decode", "started"},
      {"preview", "started"},  {"export", "started"}};
  QCOMPARE(outcome, expected);
}

void tst_e2e::cancelDuringSampling() {
  QTemporaryDir out;
  QProcess process;
  process.start(kRunner, {"run", kDemo, "--output-dir", out.path(), "--json-events", "--set",
                          "sampler.steps=1000"});
  QVERIFY(process.waitForStarted());
  QString seen;
  const bool sampling = interrupt_after(
      process,
      [](const nlohmann::json& e) { return e.value("event", "") == "node_progress" && e.value("node", "") == "sampler"; },
      seen);
  QVERIFY2(sampling, qPrintable("never saw sampler progress: " + seen.right(2000)));
  QVERIFY(process.waitForFinished(60000));
  QCOMPARE(process.exitCode(), 130);
  // A cancelled run leaves no output file, only its line in the history.
  QCOMPARE(files_in(out.path()), std::vector<std::string>{"vidgraph-history.jsonl"});
}

void tst_e2e::sweepRerunsOnlyDownstream() {
  QTemporaryDir out;
  QStringList args{"run", kDemo, "--output-dir", out.path(), "--json-events", "--sweep", "sampler.seed=1,2"};
  args << quick();
  const RunOutcome r = run_runner(args);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out.right(3000) + r.err));
  std::map<int, std::map<std::string, std::string>> outcome;  // run index -> node id -> cached/started
  for (const auto& e : json_lines(r.out)) {
    QVERIFY2(e.is_object(), "every stdout line is JSON");
    const std::string kind = e.value("event", "");
    if (kind == "node_cached" || kind == "node_started") {
      outcome[e.at("run_index").get<int>()][e.at("node").get<std::string>()] = kind == "node_cached" ? "cached" : "started";
    }
  }
  QCOMPARE(outcome.size(), std::size_t(2));
  for (const auto& [id, what] : outcome[1]) QVERIFY2(what == "started", id.c_str());
  // Run 2 changes only the seed: model load, image and text encoding come from run 1's cache.
  const std::map<std::string, std::string> expected = {
      {"image", "cached"},    {"prompt", "cached"},   {"model", "cached"},    {"encode", "cached"},
      {"sampler", "started"}, {"decode", "started"},  {"preview", "started"}, {"export", "started"}};
  QCOMPARE(outcome[2], expected);
  // Each run's MP4 in its own folder; different seeds, different videos; each carries its settings.
  const std::string first = out.filePath("run-1/demo.mp4").toStdString();
  const std::string second = out.filePath("run-2/demo.mp4").toStdString();
  for (const auto& [mp4, seed] : {std::pair{first, 1}, std::pair{second, 2}}) {
    media::VideoInfo info;
    std::string error;
    QVERIFY2(media::probe_video(mp4, &info, &error), error.c_str());
    QCOMPARE(info.frame_count, 5);
    const auto workflow = nlohmann::json::parse(info.metadata["comment"], nullptr, false);
    QVERIFY(workflow.is_object());
    for (const auto& n : workflow["nodes"]) {
      if (n.value("id", "") == "sampler") QCOMPARE(n["params"]["seed"], nlohmann::json(seed));
    }
  }
  QVERIFY2(file_bytes(first) != file_bytes(second), "two seeds gave the same video");
  const auto summary = nlohmann::json::parse(file_bytes(out.filePath("sweep.json").toStdString()), nullptr, false);
  QCOMPARE(summary["runs"][1]["outputs"], nlohmann::json({"run-2/demo.mp4"}));
  QCOMPARE(summary["runs"][1]["settings"], nlohmann::json({{"sampler.seed", 2}}));
  QCOMPARE(tree_of(out.path()),
           (std::vector<std::string>{"run-1", "run-1/demo.mp4", "run-2", "run-2/demo.mp4", "sweep.json",
                                     "vidgraph-history.jsonl"}));
}

void tst_e2e::sweepCancelLeavesNoPartialFiles() {
  QTemporaryDir out;
  QProcess process;
  // Run 1 is quick; Ctrl-C arrives while run 2 samples its 1000 steps.
  process.start(kRunner, {"run", kDemo, "--output-dir", out.path(), "--json-events", "--set", "sampler.frames=5",
                          "--sweep", "sampler.steps=2,1000"});
  QVERIFY(process.waitForStarted());
  QString seen;
  const bool sampling = interrupt_after(
      process,
      [](const nlohmann::json& e) {
        return e.value("event", "") == "node_progress" && e.value("node", "") == "sampler" &&
               e.value("run_index", 0) == 2;
      },
      seen);
  QVERIFY2(sampling, qPrintable("never saw run 2's sampler progress: " + seen.right(2000)));
  QVERIFY(process.waitForFinished(60000));
  QCOMPARE(process.exitCode(), 130);
  // Run 1's video stays complete; run 2 leaves nothing (not even its folder); sweep.json says so.
  QCOMPARE(tree_of(out.path()),
           (std::vector<std::string>{"run-1", "run-1/demo.mp4", "sweep.json", "vidgraph-history.jsonl"}));
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(out.filePath("run-1/demo.mp4").toStdString(), &info, &error), error.c_str());
  const auto summary = nlohmann::json::parse(file_bytes(out.filePath("sweep.json").toStdString()), nullptr, false);
  QCOMPARE(summary["status"], nlohmann::json("cancelled"));
  QCOMPARE(summary["runs"][0]["status"], nlohmann::json("succeeded"));
  QCOMPARE(summary["runs"][1]["status"], nlohmann::json("cancelled"));
}

// A node that fails while running exits 3; an output that cannot be written is refused before any
// node runs (exit 2, the workflow is invalid as set).
void tst_e2e::errorsExitWithTheirCode_data() {
  QTest::addColumn<QString>("setup");  // what the row prepares in the temp folder
  QTest::addColumn<QStringList>("sets");
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("message");
  QTest::addColumn<int>("exit_code");
  QTest::newRow("corrupt image") << "corrupt" << QStringList{"image.path=%1/corrupt.png"} << "image"
                                 << "corrupt" << 3;
  QTest::newRow("missing model files") << "" << QStringList{"model.model_path=%1/no-model"}
                                       << "model" << "does not exist" << 3;
  QTest::newRow("missing VAE file") << "" << QStringList{"model.vae=%1/absent.safetensors"} << "model"
                                    << "does not exist" << 3;
  QTest::newRow("output under a file") << "blocker" << QStringList{"export.filename=%1/blocker/demo.mp4"}
                                       << "export" << "not a folder" << 2;
}

void tst_e2e::errorsExitWithTheirCode() {
  QFETCH(QString, setup);
  QFETCH(QStringList, sets);
  QFETCH(QString, node);
  QFETCH(QString, message);
  QFETCH(int, exit_code);
  QTemporaryDir dir;
  if (setup == "corrupt") {
    std::ofstream(dir.filePath("corrupt.png").toStdString(), std::ios::binary)
        << "\x89PNG\r\n\x1a\n" << std::string(100, 'z');
  }
  if (setup == "blocker") std::ofstream(dir.filePath("blocker").toStdString()) << "a file";
  QStringList args{"run", kDemo, "--output-dir", dir.filePath("out")};
  args << quick();
  for (const QString& s : sets) args << "--set" << s.arg(dir.path());
  const RunOutcome r = run_runner(args);
  QVERIFY2(r.exit_code == exit_code, qPrintable(QString::number(r.exit_code) + r.out + r.err));
  const QString text = r.out + r.err;
  QVERIFY2(text.contains(node) && text.contains(message), qPrintable(text));
  QVERIFY(!QFile::exists(dir.filePath("out/demo.mp4")));
}

void tst_e2e::existingOutputIsKept() {
  QTemporaryDir out;
  const std::string mp4 = out.filePath("demo.mp4").toStdString();
  std::ofstream(mp4) << "keep me";
  QStringList args{"run", kDemo, "--output-dir", out.path()};
  args << quick();
  // The default naming writes the next free name and keeps the earlier file.
  RunOutcome r = run_runner(args);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  QCOMPARE(fs::file_size(mp4), std::uintmax_t(7));
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(out.filePath("demo_00002.mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 5);
  // naming=fail stops before any node runs (exit 2), naming the node, the file and the ways out.
  r = run_runner(QStringList(args) << "--set" << "export.naming=fail");
  QVERIFY2(r.exit_code == 2, qPrintable(r.out + r.err));
  QVERIFY2((r.out + r.err).contains("export"), qPrintable(r.out + r.err));
  QVERIFY2((r.out + r.err).contains("already exists"), qPrintable(r.out + r.err));
  QVERIFY2((r.out + r.err).contains("--overwrite"), qPrintable(r.out + r.err));
  QVERIFY2(!(r.out + r.err).contains("started"), qPrintable(r.out + r.err));
  // --overwrite replaces only an earlier MP4: not a file of someone else's.
  r = run_runner(QStringList(args) << "--overwrite");
  QVERIFY2(r.exit_code == 2, qPrintable(r.out + r.err));
  QVERIFY2((r.out + r.err).contains("left untouched"), qPrintable(r.out + r.err));
  QCOMPARE(fs::file_size(mp4), std::uintmax_t(7));
  r = run_runner(QStringList(args) << "--overwrite" << "--set" << "export.filename={output}/demo_00002.mp4");
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  QVERIFY2(media::probe_video(out.filePath("demo_00002.mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(files_in(out.path()), (std::vector<std::string>{"demo.mp4", "demo_00002.mp4", "vidgraph-history.jsonl"}));
}

// frames is 4k + 1 (a step of 4 from 1): `--set sampler.frames=5` validates like the file's own 25,
// and 24 is refused before anything runs, with the valid neighbours named.
void tst_e2e::framesStepThroughSet() {
  const RunOutcome five = run_runner({"validate", kDemo, "--set", "sampler.frames=5"});
  QVERIFY2(five.exit_code == 0, qPrintable(five.out + five.err));
  QTemporaryDir out;
  const RunOutcome bad = run_runner({"run", kDemo, "--output-dir", out.filePath("o"), "--set", "sampler.frames=24"});
  QVERIFY2(bad.exit_code == 2, qPrintable(QString::number(bad.exit_code) + bad.out + bad.err));
  QVERIFY2((bad.out + bad.err).contains("1 plus a multiple of 4 (e.g. 21 or 25)"), qPrintable(bad.out + bad.err));
  QVERIFY(!QFile::exists(out.filePath("o")));
}

// The MP4 a run wrote carries its workflow (with the --set values of that run): `validate out.mp4`
// and `run out.mp4` take it as the workflow, so the second run makes 5 frames as the first did
// (the demo file itself says 25). A file that only looks like an MP4 is named for what it is.
void tst_e2e::runFromItsOutput() {
  QTemporaryDir dir;
  RunOutcome r = run_runner(QStringList{"run", kDemo, "--output-dir", dir.filePath("first")} << quick());
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  const QString made = dir.filePath("first/demo.mp4");
  r = run_runner({"validate", made, "--json"});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  const auto report = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
  QVERIFY2(report.value("valid", false), qPrintable(r.out));
  r = run_runner({"run", made, "--output-dir", dir.filePath("second")});
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(dir.filePath("second/demo.mp4").toStdString(), &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 5);
  std::ofstream(dir.filePath("fake.mp4").toStdString()) << "not a video at all";
  r = run_runner({"validate", dir.filePath("fake.mp4")});
  QCOMPARE(r.exit_code, 2);
  QVERIFY2((r.out + r.err).contains("Nor does it hold a workflow to read back"), qPrintable(r.out + r.err));
}

QTEST_GUILESS_MAIN(tst_e2e)
#include "tst_e2e.moc"
