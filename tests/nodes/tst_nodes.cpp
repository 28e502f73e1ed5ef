// Tests the built-in node types: every descriptor is complete and its params validated; each compute
// function runs through a NodeContext (no engine) on real files.
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "engine/engine.h"
#include "engine/node_context.h"
#include "engine/registry.h"
#include "engine/workflow_file.h"
#include "nodes/register_nodes.h"
#include "models/wan/wan_tiny.h"
#include "nodes/types/conditioning.h"
#include "nodes/types/latent.h"
#include "nodes/types/model_files.h"
#include "nodes/types/model_handles.h"
#include "nodes/types/stage_memory.h"
#include "nodes/value_types.h"
#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
#include "models/io/safetensors.h"
#include "nodes/demo/random_model.h"
#endif
#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/image_io.h"
#include "nodes/media/video_probe.h"
#endif

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;

namespace {

struct Recorder {
  std::vector<std::pair<std::int64_t, std::int64_t>> progress;
  std::vector<engine::Value> previews;
  bool cancel = false;
};

engine::NodeContext make_context(const engine::NodeType& type, const nlohmann::json& params,
                                 engine::ValueMap inputs, engine::RunOptions options,
                                 Recorder* recorder) {
  engine::NodeContext::Hooks hooks;
  hooks.progress = [recorder](std::int64_t v, std::int64_t m, const std::string&) {
    recorder->progress.emplace_back(v, m);
  };
  hooks.cancelled = [recorder] { return recorder->cancel; };
  hooks.preview = [recorder](const engine::Value& v) { recorder->previews.push_back(v); };
  hooks.log = [](engine::LogLevel, const std::string&) {};
  return engine::NodeContext("n1", type.name, std::move(inputs), type.params_with_defaults(params),
                             std::move(options), hooks);
}

Video gradient_video(int count, int width, int height) {
  Video video;
  video.frames = Frames{count, width, height, {}};
  video.frames.rgb.resize(video.frames.frame_bytes() * count);
  for (std::size_t i = 0; i < video.frames.rgb.size(); ++i) {
    video.frames.rgb[i] = static_cast<std::uint8_t>((i * 7) % 251);
  }
  return video;
}

}  // namespace

class tst_nodes : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void everyTypeRegistered();
  void descriptorsComplete();
  void paramsValidated_data();
  void paramsValidated();
  void promptDefaults();
  void latentRoundTripExact();
  void writersKeyedByOutputPath();
  void saveLatentRefusesOverwrite();
  void loadLatentErrors_data();
  void loadLatentErrors();
  void previewEmitsAndWritesSheet();
  void samplerRejectsBadSettings_data();
  void samplerRejectsBadSettings();
  void samplerTinyRunIsDeterministic();
  void samplerCancels();
  void modelFilesLocated();
  void loadModelErrors_data();
  void loadModelErrors();
  void stageMemorySilentOnCpu();
#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
  void randomModelTinyLoads();
  void samplerWorkflowRuns_data();
  void samplerWorkflowRuns();
#endif
#ifdef VIDGRAPH_HAVE_MEDIA
  void loadImageFitsSizeRules();
  void loadImageErrors();
  void loadImageFingerprintFollowsFile();
  void exportEmbedsWorkflow();
  void exportCancelLeavesNoFile();
  void exportRefusesExisting();
#endif

 private:
  const engine::NodeType& type(const char* name) const {
    const engine::NodeType* t = registry_.find(name);
    if (!t) qFatal("node type %s not registered", name);
    return *t;
  }
  engine::Registry registry_;
};

namespace {

// A tiny DiT (48 latent channels, text_dim 64) and matching embeddings.
engine::ValueMap tiny_model_inputs() {
  DitHandle dit;
  dit.model = wan::wan_make_model(wan::wan_tiny_config(), 7).ptr();
  Conditioning cond;
  cond.context = at::randn({1, 5, dit.model->config().text_dim});
  cond.context_null = at::randn({1, 3, dit.model->config().text_dim});
  return {{"model", engine::make_value(kModelType, dit)},
          {"conditioning", engine::make_value(kConditioningType, cond)}};
}

nlohmann::json tiny_sampler_params() {
  return {{"width", 64}, {"height", 32}, {"frames", 5}, {"steps", 2}, {"attention", "full"},
          {"seed", 3}};
}

}  // namespace

void tst_nodes::initTestCase() { register_builtin_nodes(registry_); }

void tst_nodes::everyTypeRegistered() {
  const std::vector<std::string> names = builtin_node_names();
  QVERIFY(names.size() >= 4);
  QCOMPARE(registry_.size(), names.size());
  for (const std::string& name : names) QVERIFY2(registry_.find(name), name.c_str());
#ifdef VIDGRAPH_HAVE_MEDIA
  QVERIFY(registry_.find("LoadImage"));
  QVERIFY(registry_.find("ExportVideo"));
#endif
}

void tst_nodes::descriptorsComplete() {
  for (const engine::NodeType* t : registry_.list()) {
    const QByteArray name = QByteArray::fromStdString(t->name);
    QVERIFY2(!t->description.empty(), name);
    QVERIFY2(!t->display_name.empty(), name);
    QVERIFY2(!t->category.empty(), name);
    QVERIFY2(t->version >= 1, name);
    QVERIFY2(!t->outputs.empty(), name);
    for (const auto& p : t->inputs) QVERIFY2(!p.description.empty() && !p.type.empty(), name);
    for (const auto& p : t->outputs) QVERIFY2(!p.description.empty() && !p.type.empty(), name);
    for (const auto& p : t->params) {
      const QByteArray what = name + "." + QByteArray::fromStdString(p.name);
      QVERIFY2(!p.description.empty(), what);
      QVERIFY2(p.check(p.default_value).ok(), what);
      if (p.kind == engine::ParamKind::Int || p.kind == engine::ParamKind::Float) {
        QVERIFY2(p.min && p.max, what + " has a range");
      }
      if (p.kind == engine::ParamKind::Enum) QVERIFY2(p.choices.size() >= 2, what);
    }
  }
}

void tst_nodes::paramsValidated_data() {
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("param");
  QTest::addColumn<QByteArray>("value");  // JSON
  QTest::addColumn<bool>("valid");
  // Every numeric param: just inside and just outside its range; enums: a choice and a non-choice.
  for (const engine::NodeType* t : registry_.list()) {
    for (const auto& p : t->params) {
      const std::string row = t->name + "." + p.name;
      const QString node = QString::fromStdString(t->name);
      const QString param = QString::fromStdString(p.name);
      if (p.min && p.max) {
        const bool is_int = p.kind != engine::ParamKind::Float;
        auto num = [is_int](double v) {
          return is_int ? QByteArray::number(qint64(v)) : QByteArray::number(v, 'g', 17);
        };
        QTest::newRow((row + " min").c_str()) << node << param << num(*p.min) << true;
        QTest::newRow((row + " max").c_str()) << node << param << num(*p.max) << true;
        QTest::newRow((row + " below").c_str()) << node << param << num(*p.min - 1) << false;
        QTest::newRow((row + " above").c_str()) << node << param << num(*p.max + 1) << false;
      }
      if (p.kind == engine::ParamKind::Enum) {
        QTest::newRow((row + " choice").c_str())
            << node << param << QByteArray::fromStdString("\"" + p.choices.front() + "\"") << true;
        QTest::newRow((row + " other").c_str()) << node << param << QByteArray("\"nope\"") << false;
      }
      if (p.kind == engine::ParamKind::Bool) {
        QTest::newRow((row + " wrong type").c_str()) << node << param << QByteArray("\"yes\"") << false;
      }
    }
  }
}

void tst_nodes::paramsValidated() {
  QFETCH(QString, node);
  QFETCH(QString, param);
  QFETCH(QByteArray, value);
  QFETCH(bool, valid);
  const engine::ParamSpec* spec = type(node.toUtf8().constData()).find_param(param.toStdString());
  QVERIFY(spec);
  QCOMPARE(spec->check(nlohmann::json::parse(value.toStdString())).ok(), valid);
}

void tst_nodes::promptDefaults() {
  const engine::NodeType& t = type("Prompt");
  QCOMPARE(t.find_param("negative")->default_value.get<std::string>(), default_negative_prompt());
  QVERIFY(default_negative_prompt().rfind("色调艳丽", 0) == 0);
  Recorder rec;
  for (const char* negative : {"", "blurry"}) {
    auto ctx = make_context(t, {{"positive", "a cat"}, {"negative", negative}}, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY(out.ok());
    const PromptText* text = engine::value_as<PromptText>(out->at("prompt"));
    QVERIFY(text);
    QCOMPARE(text->positive, std::string("a cat"));
    QCOMPARE(text->negative, std::string(*negative ? negative : default_negative_prompt()));
  }
}

void tst_nodes::writersKeyedByOutputPath() {
  engine::RunOptions a, b;
  a.output_dir = "/tmp/vidgraph-run-a";
  b.output_dir = "/tmp/vidgraph-run-b";
  for (const auto& [name, param] : {std::pair<std::string, std::string>{"SaveLatent", "filename"},
                                    {"PreviewVideo", "contact_sheet"},
#ifdef VIDGRAPH_HAVE_MEDIA
                                    {"ExportVideo", "filename"},
#endif  // VIDGRAPH_HAVE_MEDIA
                                   }) {
    const engine::NodeType& t = type(name.c_str());
    QVERIFY2(t.fingerprint, name.c_str());
    const nlohmann::json params = t.params_with_defaults({{param, "{output}/out.file"}});
    // Another output folder (a sweep's next run) is another cache key; the same one is not.
    QVERIFY2(t.fingerprint(params, a) != t.fingerprint(params, b), name.c_str());
    QCOMPARE(t.fingerprint(params, a), t.fingerprint(params, a));
    QCOMPARE(t.fingerprint(params, a), std::string("/tmp/vidgraph-run-a/out.file"));
  }
}

void tst_nodes::latentRoundTripExact() {
  QTemporaryDir dir;
  Latent latent;
  latent.samples = at::randn({1, 48, 3, 4, 6});
  latent.info["seed"] = "42";
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  const engine::NodeType& save = type("SaveLatent");
  auto save_ctx = make_context(save, {{"filename", "{output}/z.safetensors"}},
                               {{"latent", engine::make_value(kLatentType, latent, latent.bytes())}},
                               options, &rec);
  auto saved = save.compute(save_ctx);
  QVERIFY2(saved.ok(), saved.ok() ? "" : saved.error().message.c_str());
  const std::string path = *engine::value_as<std::string>(saved->at("path"));
  QVERIFY(fs::exists(path));
  const engine::NodeType& load = type("LoadLatent");
  auto load_ctx = make_context(load, {{"path", path}}, {}, options, &rec);
  auto loaded = load.compute(load_ctx);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
  const Latent* back = engine::value_as<Latent>(loaded->at("latent"));
  QVERIFY(back);
  QVERIFY(at::equal(back->samples, latent.samples));
  QCOMPARE(back->info.at("seed"), std::string("42"));
}

void tst_nodes::saveLatentRefusesOverwrite() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("z.safetensors").toStdString();
  std::ofstream(path) << "keep";
  Latent latent;
  latent.samples = at::randn({1, 4, 1, 2, 2});
  Recorder rec;
  const engine::NodeType& save = type("SaveLatent");
  auto ctx = make_context(save, {{"filename", path}},
                          {{"latent", engine::make_value(kLatentType, latent)}}, {}, &rec);
  auto out = save.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("already exists") != std::string::npos);
  QCOMPARE(out.error().node_id, std::string("n1"));
  QCOMPARE(fs::file_size(path), std::uintmax_t(4));
}

void tst_nodes::loadLatentErrors_data() {
  QTest::addColumn<QByteArray>("content");
  QTest::addColumn<QString>("expected");
  QTest::newRow("missing") << QByteArray("<none>") << "does not exist";
  QTest::newRow("garbage") << QByteArray("not safetensors at all") << "Could not read the latent";
}

void tst_nodes::loadLatentErrors() {
  QFETCH(QByteArray, content);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  const std::string path = dir.filePath("z.safetensors").toStdString();
  if (content != "<none>") std::ofstream(path) << content.toStdString();
  Recorder rec;
  const engine::NodeType& load = type("LoadLatent");
  auto ctx = make_context(load, {{"path", path}}, {}, {}, &rec);
  auto out = load.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos,
           out.error().message.c_str());
}

void tst_nodes::previewEmitsAndWritesSheet() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("PreviewVideo");
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  const Video video = gradient_video(5, 32, 16);
  nlohmann::json params = nlohmann::json::object();
#ifdef VIDGRAPH_HAVE_MEDIA
  params["contact_sheet"] = "{output}/sheet.png";
#endif
  auto ctx = make_context(t, params, {{"video", engine::make_value(kVideoType, video)}}, options, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(int(rec.previews.size()), 1);
  QCOMPARE(rec.previews[0].type, std::string(kVideoType));
  QCOMPARE(engine::value_as<Video>(rec.previews[0])->frames.count, 5);
#ifdef VIDGRAPH_HAVE_MEDIA
  Image sheet;
  std::string error;
  QVERIFY2(media::load_image(dir.filePath("sheet.png").toStdString(), &sheet, &error), error.c_str());
  QVERIFY(sheet.width > 4 * 256);
#endif
}


void tst_nodes::samplerRejectsBadSettings_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("expected");
  QTest::newRow("frames not 4k+1") << QByteArray(R"({"frames": 6})") << "4k + 1";
  QTest::newRow("width not x32") << QByteArray(R"({"width": 80, "height": 32})") << "multiples of 32";
  QTest::newRow("unknown method")
      << QByteArray(R"({"attention": "nope"})") << "no method 'nope'";
}

void tst_nodes::samplerRejectsBadSettings() {
  QFETCH(QByteArray, params);
  QFETCH(QString, expected);
  const engine::NodeType& t = type("WanSampler");
  nlohmann::json p = tiny_sampler_params();
  p.update(nlohmann::json::parse(params.toStdString()));
  Recorder rec;
  auto ctx = make_context(t, p, tiny_model_inputs(), {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos,
           out.error().message.c_str());
  QVERIFY(rec.progress.empty());
}

void tst_nodes::samplerTinyRunIsDeterministic() {
  const engine::NodeType& t = type("WanSampler");
  const engine::ValueMap inputs = tiny_model_inputs();
  at::Tensor first;
  for (int run = 0; run < 2; ++run) {
    Recorder rec;
    auto ctx = make_context(t, tiny_sampler_params(), inputs, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
    const Latent* latent = engine::value_as<Latent>(out->at("latent"));
    // [1, 48, (5 - 1) / 4 + 1, 32 / 16, 64 / 16]
    QCOMPARE(shape_text(latent->samples), std::string("[1, 48, 2, 2, 4]"));
    QCOMPARE(latent->info.at("seed"), std::string("3"));
    QCOMPARE(int(rec.progress.size()), 2);
    QCOMPARE(rec.progress.back(), std::make_pair(std::int64_t(2), std::int64_t(2)));
    if (run == 0) first = latent->samples;
    else QVERIFY(at::equal(first, latent->samples));
  }
}

void tst_nodes::samplerCancels() {
  const engine::NodeType& t = type("WanSampler");
  Recorder rec;
  rec.cancel = true;
  auto ctx = make_context(t, tiny_sampler_params(), tiny_model_inputs(), {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("cancelled") != std::string::npos, out.error().message.c_str());
  QVERIFY(rec.progress.empty());
}

void tst_nodes::modelFilesLocated() {
  QTemporaryDir dir;
  fs::create_directories(dir.filePath("google/umt5-xxl").toStdString());
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors.index.json",
                        "Wan2.2_VAE.pth", "models_t5_umt5-xxl-enc-bf16.pth",
                        "google/umt5-xxl/spiece.model"}) {
    std::ofstream(dir.filePath(f).toStdString()) << "x";
  }
  auto files = locate_model_files(dir.path().toStdString(), {});
  QVERIFY2(files.ok(), files.ok() ? "" : files.error().message.c_str());
  QCOMPARE(files->vae, dir.filePath("Wan2.2_VAE.pth").toStdString());
  QCOMPARE(files->text_encoder, dir.filePath("models_t5_umt5-xxl-enc-bf16.pth").toStdString());
  QCOMPARE(files->tokenizer, dir.filePath("google/umt5-xxl/spiece.model").toStdString());
  QCOMPARE(fs::path(files->dit), fs::path(dir.path().toStdString()));
  fs::remove(dir.filePath("Wan2.2_VAE.pth").toStdString());
  auto missing = locate_model_files(dir.path().toStdString(), {});
  QVERIFY(!missing.ok());
  QVERIFY2(missing.error().message.find("No VAE found") != std::string::npos,
           missing.error().message.c_str());
  QVERIFY(missing.error().message.find("set the vae param") != std::string::npos);
}

void tst_nodes::loadModelErrors_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("expected");
  QTest::newRow("no folder") << QByteArray(R"({})") << "No model folder";
  QTest::newRow("missing folder") << QByteArray(R"({"model_path": "/nonexistent/wan"})")
                                  << "does not exist";
  QTest::newRow("missing dit file")
      << QByteArray(R"({"model_path": "/tmp", "dit": "/nonexistent/dit.safetensors"})")
      << "DiT path '/nonexistent/dit.safetensors' does not exist";
}

void tst_nodes::loadModelErrors() {
  QFETCH(QByteArray, params);
  QFETCH(QString, expected);
  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  auto ctx = make_context(t, nlohmann::json::parse(params.toStdString()), {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos,
           out.error().message.c_str());
}

// Peak-memory lines exist only for GPUs with counters: on the CPU nothing is posted.
void tst_nodes::stageMemorySilentOnCpu() {
  const StageMemory memory(c10::Device(c10::kCPU));
  QCOMPARE(memory.line("Wan Sampler"), std::string());
  int logged = 0;
  engine::NodeContext::Hooks hooks;
  hooks.log = [&logged](engine::LogLevel, const std::string&) { ++logged; };
  const engine::NodeContext ctx("n1", "WanSampler", {}, nlohmann::json::object(), {}, hooks);
  QCOMPARE(memory.report(ctx, "Wan Sampler"), std::string());
  QCOMPARE(logged, 0);
}

#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
namespace {
const std::string kDemoFolder = VIDGRAPH_BINARY_DIR "/share/vidgraph/models/wan22-tiny";
}

// The benchmark generator at the tiny configs: sharded files Load Wan Model reads, filled at the
// documented scale (not left uninitialised), and an encoder that encodes.
void tst_nodes::randomModelTinyLoads() {
  QTemporaryDir dir;
  RandomModelOptions options;
  options.tiny = true;
  options.text_layers = 3;
  options.tokenizer = kDemoFolder + "/spiece.model";
  options.shard_bytes = 64 * 1024;  // several shards even at the tiny sizes
  const RandomModelSummary summary = write_random_model(dir.path().toStdString(), options);
  QVERIFY(summary.dit_shards > 1);
  QVERIFY(summary.text_encoder_shards > 1);
  const fs::path root(dir.path().toStdString());
  QVERIFY(fs::exists(root / "diffusion_pytorch_model.safetensors.index.json"));
  QVERIFY(fs::exists(root / "Wan2.2_VAE.safetensors"));
  QVERIFY(fs::exists(root / "spiece.model"));

  char shard[64];
  std::snprintf(shard, sizeof(shard), "diffusion_pytorch_model-00001-of-%05lld.safetensors",
                static_cast<long long>(summary.dit_shards));
  const model_io::SafetensorsFile file = model_io::SafetensorsFile::open((root / shard).string());
  const at::Tensor w = file.load("patch_embedding.weight", c10::Device(c10::kCPU), at::kFloat);
  QCOMPARE(file.entry("patch_embedding.weight").dtype, std::string("BF16"));
  const double expected = 1.0 / std::sqrt(double(w.numel() / w.size(0)));
  QVERIFY2(std::abs(w.std().item<double>() / expected - 1.0) < 0.15, "patch_embedding scale");

  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  auto ctx = make_context(t, {{"model_path", dir.path().toStdString()}, {"device", "cpu"}}, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const DitHandle* dit = engine::value_as<DitHandle>(out->at("model"));
  QCOMPARE(dit->model->config().num_layers, wan::wan_tiny_config().num_layers);
  QCOMPARE(dit->model->config().in_dim, int64_t(8));  // the tiny VAE's z
  const TextEncoderHandle* text = engine::value_as<TextEncoderHandle>(out->at("text_encoder"));
  const at::Tensor emb = text->encode("a river in the hills");
  QCOMPARE(emb.size(2), dit->model->config().text_dim);
  QVERIFY(emb.isfinite().all().item<bool>());
}

void tst_nodes::samplerWorkflowRuns_data() {
  QTest::addColumn<QString>("attention");
  QTest::addColumn<bool>("valid");
  QTest::newRow("full") << "full" << true;
  QTest::newRow("vsa") << "vsa" << true;
  QTest::newRow("sla_star") << "sla_star" << true;
  QTest::newRow("unknown method") << "dense" << false;
}

// tests/bench/graph/sampler-t2v.vgflow: no media nodes (so it runs in a VIDGRAPH_MEDIA=OFF build),
// validates, and runs on the CPU on the demo model with the settings graph_run.sh overrides.
void tst_nodes::samplerWorkflowRuns() {
  QFETCH(QString, attention);
  QFETCH(bool, valid);
  engine::LoadOptions load;
  load.registry = &registry_;
  auto loaded = engine::load_workflow_file(VIDGRAPH_SOURCE_DIR "/tests/bench/graph/sampler-t2v.vgflow", load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  QTemporaryDir out;
  engine::RunRequest request;
  request.options.output_dir = out.path().toStdString();
  request.options.resources_dir = VIDGRAPH_BINARY_DIR "/share/vidgraph";
  request.overrides = {"model.device=cpu", "sampler.steps=2", "sampler.frames=5",
                       "sampler.width=128", "sampler.height=64", "sampler.guidance=5",
                       "sampler.batch_cfg=true", "sampler.sparsity=0.875", "model.dtype=float32",
                       "sampler.attention=" + attention.toStdString()};
  engine::Engine engine(registry_);
  std::vector<std::int64_t> steps;
  engine.events().subscribe([&steps](const engine::Event& e) {
    if (e.kind == engine::EventKind::NodeProgress && e.node_id == "sampler") steps.push_back(e.value);
  });
  const engine::RunResult result = engine.run(loaded->document, request);
  const bool written = fs::exists(out.filePath("latent.safetensors").toStdString());
  if (!valid) {
    QCOMPARE(result.status, engine::RunStatus::Invalid);
    QVERIFY(!written);
    return;
  }
  QVERIFY2(result.status == engine::RunStatus::Succeeded,
           result.errors.empty() ? "failed" : result.errors.front().to_string().c_str());
  QCOMPARE(steps, (std::vector<std::int64_t>{1, 2}));
  QVERIFY(written);
}
#endif  // VIDGRAPH_HAVE_RANDOM_MODEL

#ifdef VIDGRAPH_HAVE_MEDIA
void tst_nodes::loadImageFitsSizeRules() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("wide.png").toStdString();
  Image image{320, 180, std::vector<std::uint8_t>(320 * 180 * 3, 90)};
  QVERIFY(media::write_png(path, image, false, nullptr));
  const engine::NodeType& t = type("LoadImage");
  Recorder rec;
  struct Case { nlohmann::json params; int w; int h; };
  const std::vector<Case> cases = {
      {{{"path", path}}, 1248, 704},                                   // reference default area
      {{{"path", path}, {"max_area", 160 * 96}}, 160, 96},             // tiny demo budget
      {{{"path", path}, {"width", 64}, {"height", 64}}, 64, 64},       // explicit size
  };
  for (const Case& c : cases) {
    auto ctx = make_context(t, c.params, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
    const Image* fitted = engine::value_as<Image>(out->at("image"));
    QCOMPARE(fitted->width, c.w);
    QCOMPARE(fitted->height, c.h);
  }
  auto bad = make_context(t, {{"path", path}, {"width", 50}, {"height", 64}}, {}, {}, &rec);
  auto out = t.compute(bad);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("multiples of 32") != std::string::npos);
}

void tst_nodes::loadImageErrors() {
  QTemporaryDir dir;
  const std::string corrupt = dir.filePath("bad.png").toStdString();
  std::ofstream(corrupt, std::ios::binary) << "\x89PNG\r\n\x1a\n" << std::string(64, 'x');
  const engine::NodeType& t = type("LoadImage");
  Recorder rec;
  for (const std::string& path : {corrupt, dir.filePath("none.png").toStdString()}) {
    auto ctx = make_context(t, {{"path", path}}, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY(!out.ok());
    QVERIFY2(out.error().message.find(path) != std::string::npos, out.error().message.c_str());
  }
}

void tst_nodes::loadImageFingerprintFollowsFile() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("a.png").toStdString();
  QVERIFY(media::write_png(path, Image{8, 8, std::vector<std::uint8_t>(192, 1)}, false, nullptr));
  const engine::NodeType& t = type("LoadImage");
  QVERIFY(t.fingerprint);
  const nlohmann::json params = t.params_with_defaults({{"path", path}});
  const std::string before = t.fingerprint(params, {});
  QVERIFY(!before.empty());
  QVERIFY(media::write_png(path, Image{16, 8, std::vector<std::uint8_t>(384, 2)}, true, nullptr));
  QVERIFY(t.fingerprint(params, {}) != before);
}

void tst_nodes::exportEmbedsWorkflow() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  options.workflow_json = R"({"format":"vidgraph-workflow","version":1,"nodes":[]})";
  auto ctx = make_context(t, {{"filename", "{output}/clip.mp4"}, {"fps", 12.0}},
                          {{"video", engine::make_value(kVideoType, gradient_video(6, 32, 32))}},
                          options, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const std::string path = *engine::value_as<std::string>(out->at("path"));
  QCOMPARE(path, dir.filePath("clip.mp4").toStdString());
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(path, &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 6);
  QCOMPARE(info.fps, 12.0);
  QCOMPARE(info.metadata["comment"], options.workflow_json);
  QCOMPARE(rec.progress.back().first, std::int64_t(6));
}

void tst_nodes::exportCancelLeavesNoFile() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  rec.cancel = true;
  auto ctx = make_context(t, {{"filename", dir.filePath("clip.mp4").toStdString()}},
                          {{"video", engine::make_value(kVideoType, gradient_video(6, 32, 32))}},
                          {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY(fs::is_empty(dir.path().toStdString()));
}

void tst_nodes::exportRefusesExisting() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("clip.mp4").toStdString();
  std::ofstream(path) << "old";
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  const engine::Value video = engine::make_value(kVideoType, gradient_video(2, 32, 32));
  auto refuse = make_context(t, {{"filename", path}}, {{"video", video}}, {}, &rec);
  auto out = t.compute(refuse);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("already exists") != std::string::npos);
  engine::RunOptions options;
  options.overwrite = true;  // the runner's --overwrite
  auto allow = make_context(t, {{"filename", path}}, {{"video", video}}, options, &rec);
  QVERIFY(t.compute(allow).ok());
  QVERIFY(fs::file_size(path) > 3);
}
#endif  // VIDGRAPH_HAVE_MEDIA

QTEST_GUILESS_MAIN(tst_nodes)
#include "tst_nodes.moc"
