// Tests the training nodes on real files: clips written with our FFmpeg encoder, the demo model
// (loaded by Load Wan Model). Load Video Dataset names bad clips (corrupt, uncaptioned, too short,
// empty caption) and skips or fails as asked; captions come from .txt files and manifests; Encode
// Dataset validates frames, writes samples of the right shapes, reuses its cache and re-encodes
// when a setting changes; Make Demo Dataset never replaces files; Train Wan lowers the loss on a
// copy of the model, writes a LoRA with ComfyUI names, and a cancel leaves a checkpoint to resume.
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "dataset_fixture.h"
#include "engine/engine.h"
#include "engine/registry.h"
#include "engine/workflow_file.h"
#include "nodes/session.h"
#include "models/io/safetensors.h"
#include "models/sampling/i2v_condition.h"
#include "models/train/demo_scenes.h"
#include "models/train/lora.h"
#include "models/wan/wan_config.h"
#include "nodes/demo/random_model.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/model/model_handles.h"
#include "nodes/training/training_set.h"
#include "nodes/datasets/video_dataset.h"
#include "nodes/value_types.h"

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;
using dataset_test::context;
using dataset_test::Recorder;
using dataset_test::write_clip;
using dataset_test::write_text;

namespace {

const char* kDemoModel = VIDGRAPH_BINARY_DIR "/share/vidgraph/models/wan22-tiny";

// The losses posted in Train Wan's progress texts ("loss 0.123456 lr 0.001").
std::vector<double> losses_of(const Recorder& recorder) {
  std::vector<double> losses;
  for (const std::string& text : recorder.progress_text) {
    if (text.rfind("loss ", 0) == 0) losses.push_back(std::stod(text.substr(5)));
  }
  return losses;
}

double mean(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double sum = 0;
  for (std::size_t i = begin; i < end; ++i) sum += v[i];
  return sum / double(end - begin);
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

class tst_dataset : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void badClipsAreNamed();
  void skipLeavesBadClipsOut();
  void emptyFolderIsAnError();
  void captionsFromManifests();
  void pngSequenceClip();
  void fingerprintSeesEdits();
  void framesMustBe4kPlus1();
  void encodeWritesSamplesAndReusesCache();
  void shortClipsForStrideAreNamed();
  void demoDatasetIsSeededAndNeverReplaces();
  void trainReducesLossAndWritesLora();
  void trainCancelLeavesResumableCheckpoint();
  void trainCaptionDropoutUsesTheDropoutPrompt();
  void trainExpertKeepsToItsNoiseLevels();
  void trainValidationClips();
  void trainImageConditionedA14b();
  void shippedWorkflowRuns();

 private:
  engine::Result<engine::ValueMap> run(const char* type, const nlohmann::json& params,
                                       engine::ValueMap inputs, Recorder* recorder);
  engine::Result<engine::ValueMap> load_dataset(const fs::path& folder, const nlohmann::json& extra,
                                                Recorder* recorder);
  engine::Result<engine::ValueMap> encode(const engine::Value& dataset, const nlohmann::json& params,
                                          Recorder* recorder);
  fs::path good_dataset(const char* name);
  engine::Value training_set(const char* name);

  QTemporaryDir dir_;
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
  engine::ValueMap model_;  // model, vae, text_encoder of the demo model
};

engine::Result<engine::ValueMap> tst_dataset::run(const char* type, const nlohmann::json& params,
                                                  engine::ValueMap inputs, Recorder* recorder) {
  const engine::NodeType* t = registry_.find(type);
  if (!t) qFatal("node type %s not registered", type);
  engine::NodeContext ctx = context(*t, params, std::move(inputs), dir_.path().toStdString(), recorder);
  return t->compute(ctx);
}

engine::Result<engine::ValueMap> tst_dataset::load_dataset(const fs::path& folder, const nlohmann::json& extra,
                                                           Recorder* recorder) {
  nlohmann::json params = extra;
  params["folder"] = folder.string();
  return run("LoadVideoDataset", params, {}, recorder);
}

engine::Result<engine::ValueMap> tst_dataset::encode(const engine::Value& dataset, const nlohmann::json& params,
                                                     Recorder* recorder) {
  return run("EncodeDataset", params,
             {{"vae", model_.at("vae")}, {"text_encoder", model_.at("text_encoder")}, {"dataset", dataset}},
             recorder);
}

// Two good MP4 clips with .txt captions.
fs::path tst_dataset::good_dataset(const char* name) {
  const fs::path folder = fs::path(dir_.path().toStdString()) / name;
  fs::create_directories(folder);
  const std::string a = write_clip((folder / "walk.mp4").string(), 9);
  const std::string b = write_clip((folder / "run.mp4").string(), 9, media::VideoFormat::Mp4, 5);
  if (!a.empty() || !b.empty()) qFatal("writing clips failed: %s %s", a.c_str(), b.c_str());
  write_text(folder / "walk.txt", "a red square walks to the right\n");
  write_text(folder / "run.txt", "a red square runs to the right");
  return folder;
}

void tst_dataset::initTestCase() {
  QVERIFY(dir_.isValid());
  QVERIFY2(fs::exists(kDemoModel), "the demo model is built with the vidgraph_demo_model target");
  Recorder recorder;
  auto loaded = run("LoadWanModel", {{"model_path", kDemoModel}, {"device", "cpu"}}, {}, &recorder);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
  model_ = *loaded;
}

void tst_dataset::badClipsAreNamed() {
  const fs::path folder = good_dataset("bad");
  std::mt19937 random(5);
  std::string noise(4000, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  write_text(folder / "corrupt.mp4", noise);
  write_text(folder / "corrupt.txt", "noise");
  QCOMPARE(write_clip((folder / "uncaptioned.mp4").string(), 9), std::string());
  QCOMPARE(write_clip((folder / "short.mp4").string(), 3), std::string());
  write_text(folder / "short.txt", "too short");
  QCOMPARE(write_clip((folder / "blank.mp4").string(), 9), std::string());
  write_text(folder / "blank.txt", "  \n\t ");
  QCOMPARE(write_clip((folder / "latin1.mp4").string(), 9), std::string());
  write_text(folder / "latin1.txt", "caf\xe9");
  Recorder recorder;
  auto out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(message.find("5 clip(s)") != std::string::npos, message.c_str());
  for (const char* part : {"corrupt.mp4: ", "uncaptioned.mp4: it has no caption", "short.mp4: it has 3 frames",
                           "blank.mp4: its caption", "is empty", "latin1.mp4: its caption",
                           "not valid UTF-8", "on_bad_clip"}) {
    QVERIFY2(message.find(part) != std::string::npos, (std::string(part) + " | " + message).c_str());
  }
  QVERIFY(message.find("walk.mp4") == std::string::npos);
}

void tst_dataset::skipLeavesBadClipsOut() {
  const fs::path folder = good_dataset("skip");
  write_text(folder / "corrupt.mp4", std::string(2000, 'x'));
  write_text(folder / "corrupt.txt", "noise");
  QCOMPARE(write_clip((folder / "short.mp4").string(), 3), std::string());
  write_text(folder / "short.txt", "short");
  Recorder recorder;
  auto out = load_dataset(folder, {{"frames", 9}, {"on_bad_clip", "skip"}}, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const auto& dataset = *engine::value_as<VideoDataset>(out->at("dataset"));
  QCOMPARE(dataset.clips.size(), std::size_t(2));
  QCOMPARE(dataset.clips[0].name, std::string("run.mp4"));
  QCOMPARE(dataset.clips[0].caption, std::string("a red square runs to the right"));
  QCOMPARE(dataset.clips[1].frame_count, 9);
  QCOMPARE(dataset.clips[1].width, 64);
  QCOMPARE(recorder.warnings.size(), std::size_t(2));
  QVERIFY(recorder.warnings[0].find("corrupt.mp4") != std::string::npos);
  QVERIFY(recorder.warnings[1].find("short.mp4") != std::string::npos);
  QVERIFY(!recorder.infos.empty() && recorder.infos.back().find("2 clip(s), 2 skipped") != std::string::npos);
}

void tst_dataset::emptyFolderIsAnError() {
  const fs::path folder = fs::path(dir_.path().toStdString()) / "empty";
  fs::create_directories(folder);
  Recorder recorder;
  auto out = load_dataset(folder, {}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("has no usable clips") != std::string::npos, out.error().message.c_str());
  // Only bad clips, skipped: still no usable clip, and the reasons are given.
  write_text(folder / "only.mp4", "not a video");
  write_text(folder / "only.txt", "caption");
  out = load_dataset(folder, {{"on_bad_clip", "skip"}}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("only.mp4") != std::string::npos, out.error().message.c_str());
  out = load_dataset(folder / "missing", {}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("missing") != std::string::npos, out.error().message.c_str());
}

void tst_dataset::captionsFromManifests() {
  const fs::path folder = fs::path(dir_.path().toStdString()) / "manifest";
  fs::create_directories(folder);
  for (const char* name : {"a.mp4", "b.webm"}) {
    const auto format = std::string(name) == "b.webm" ? media::VideoFormat::WebM : media::VideoFormat::Mp4;
    QCOMPARE(write_clip((folder / name).string(), 5, format), std::string());
  }
  write_text(folder / "captions.csv", "file,caption\na.mp4,\"red, fast \"\"square\"\"\"\nb.webm,slow square\n");
  Recorder recorder;
  auto out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  auto dataset = *engine::value_as<VideoDataset>(out->at("dataset"));
  QCOMPARE(dataset.clips.size(), std::size_t(2));
  QCOMPARE(dataset.clips[0].caption, std::string("red, fast \"square\""));
  QCOMPARE(dataset.clips[1].caption, std::string("slow square"));
  QCOMPARE(dataset.clips[1].frame_count, 5);
  // A .txt beside the clip wins over the manifest.
  write_text(folder / "b.txt", "from the txt");
  out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY(out.ok());
  QCOMPARE(engine::value_as<VideoDataset>(out->at("dataset"))->clips[1].caption, std::string("from the txt"));
  // Both manifests: refused; a bad jsonl line is named.
  write_text(folder / "captions.jsonl", "{\"file\": \"a.mp4\", \"caption\": \"json\"}\n{\"file\": 3}\n");
  out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("both captions.jsonl and captions.csv") != std::string::npos,
           out.error().message.c_str());
  fs::remove(folder / "captions.csv");
  out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("Line 2 of") != std::string::npos, out.error().message.c_str());
  write_text(folder / "captions.jsonl", "{\"file\": \"a.mp4\", \"caption\": \"json caption\"}\n");
  out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(engine::value_as<VideoDataset>(out->at("dataset"))->clips[0].caption, std::string("json caption"));
}

void tst_dataset::pngSequenceClip() {
  const fs::path folder = fs::path(dir_.path().toStdString()) / "pngs";
  fs::create_directories(folder);
  QCOMPARE(write_clip((folder / "frames").string(), 6, media::VideoFormat::PngSequence), std::string());
  write_text(folder / "frames.txt", "png frames");
  Recorder recorder;
  auto out = load_dataset(folder, {{"frames", 5}}, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const auto& clip = engine::value_as<VideoDataset>(out->at("dataset"))->clips.at(0);
  QCOMPARE(clip.name, std::string("frames"));
  QCOMPARE(clip.frame_count, 6);
  QCOMPARE(clip.height, 48);
}

void tst_dataset::fingerprintSeesEdits() {
  const fs::path folder = good_dataset("fingerprint");
  const engine::NodeType& type = *registry_.find("LoadVideoDataset");
  const nlohmann::json params = type.params_with_defaults({{"folder", folder.string()}});
  const std::string before = type.fingerprint(params, {});
  QCOMPARE(type.fingerprint(params, {}), before);
  write_text(folder / "walk.txt", "an edited caption, longer than before");
  const std::string edited = type.fingerprint(params, {});
  QVERIFY(edited != before);
  fs::remove(folder / "run.mp4");
  QVERIFY(type.fingerprint(params, {}) != edited);
}

void tst_dataset::framesMustBe4kPlus1() {
  const engine::NodeType& type = *registry_.find("EncodeDataset");
  const std::string problem = type.preflight(type.params_with_defaults({{"frames", 6}}), {});
  QVERIFY2(problem.find("frames must be 4k + 1") != std::string::npos, problem.c_str());
  QVERIFY(type.preflight(type.params_with_defaults({{"frames", 9}}), {}).empty());
  QVERIFY(!type.preflight(type.params_with_defaults({{"width", 100}}), {}).empty());
  Recorder recorder;
  auto dataset = load_dataset(good_dataset("frames"), {{"frames", 5}}, &recorder);
  QVERIFY(dataset.ok());
  auto out = encode(dataset->at("dataset"), {{"frames", 6}}, &recorder);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("4k + 1") != std::string::npos);
}

void tst_dataset::encodeWritesSamplesAndReusesCache() {
  Recorder recorder;
  auto dataset = load_dataset(good_dataset("encode"), {{"frames", 9}}, &recorder);
  QVERIFY(dataset.ok());
  const fs::path cache = fs::path(dir_.path().toStdString()) / "encode-cache";
  const nlohmann::json params = {{"width", 64}, {"height", 32}, {"frames", 5}, {"frame_stride", 2},
                                 {"cache_folder", cache.string()}};
  auto out = encode(dataset->at("dataset"), params, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QVERIFY(recorder.infos.back().find("2 clip(s) encoded, 0 from the cache") != std::string::npos);
  QCOMPARE(recorder.progress.back(), std::make_pair(std::int64_t(2), std::int64_t(2)));
  const TrainingSet set = *engine::value_as<TrainingSet>(out->at("training_set"));
  QCOMPARE(set.samples.size(), std::size_t(2));
  const std::vector<int64_t> latent_shape{8, 2, 2, 4};  // demo VAE z 8, (5-1)/4+1, 32/16, 64/16
  for (const TrainingSampleFile& file : set.samples) {
    QCOMPARE(file.latent_shape, latent_shape);
    QCOMPARE(file.context_shape.size(), std::size_t(2));
    const TrainingSampleData data = read_training_sample(file.path);
    QCOMPARE(data.latent.sizes().vec(), latent_shape);
    QCOMPARE(data.latent.scalar_type(), at::kFloat);
    QCOMPARE(data.context.sizes().vec(), file.context_shape);
    QCOMPARE(data.mode, std::string("t2v"));
    QVERIFY(data.caption.find("red square") != std::string::npos);
  }
  QCOMPARE(set.samples[0].source, std::string("run.mp4"));
  const std::set<std::string> first = files_in(cache);
  QCOMPARE(first.size(), std::size_t(2));
  const auto mtime = fs::last_write_time(set.samples[0].path);

  // Same settings: everything from the cache, nothing rewritten.
  out = encode(dataset->at("dataset"), params, &recorder);
  QVERIFY(out.ok());
  QVERIFY2(recorder.infos.back().find("0 clip(s) encoded, 2 from the cache") != std::string::npos,
           recorder.infos.back().c_str());
  QCOMPARE(files_in(cache), first);
  QVERIFY(fs::last_write_time(set.samples[0].path) == mtime);

  // A changed setting: new samples beside the old ones.
  nlohmann::json changed = params;
  changed["mode"] = "i2v";
  out = encode(dataset->at("dataset"), changed, &recorder);
  QVERIFY(out.ok());
  QVERIFY(recorder.infos.back().find("2 clip(s) encoded, 0 from the cache") != std::string::npos);
  QCOMPARE(files_in(cache).size(), std::size_t(4));
  QVERIFY(engine::value_as<TrainingSet>(out->at("training_set"))->samples[0].image_to_video);

  // A damaged cache entry is reported, never served.
  write_text(set.samples[1].path, "damaged");
  out = encode(dataset->at("dataset"), params, &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("walk.mp4") != std::string::npos, out.error().message.c_str());
}

void tst_dataset::shortClipsForStrideAreNamed() {
  Recorder recorder;
  auto dataset = load_dataset(good_dataset("stride"), {{"frames", 5}}, &recorder);
  QVERIFY(dataset.ok());
  auto out = encode(dataset->at("dataset"), {{"width", 64}, {"height", 32}, {"frames", 5}, {"frame_stride", 3}},
                    &recorder);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("needs 13 source frames") != std::string::npos, out.error().message.c_str());
  QVERIFY(out.error().message.find("walk.mp4: 9 frames") != std::string::npos);
}

void tst_dataset::demoDatasetIsSeededAndNeverReplaces() {
  const fs::path folder = fs::path(dir_.path().toStdString()) / "demo";
  Recorder recorder;
  const nlohmann::json params = {{"folder", folder.string()}, {"clips", 3}, {"frames", 9}, {"seed", 4}};
  auto made = run("MakeDemoDataset", params, {}, &recorder);
  QVERIFY2(made.ok(), made.ok() ? "" : made.error().message.c_str());
  QCOMPARE(*engine::value_as<std::string>(made->at("folder")), folder.string());
  auto dataset = run("LoadVideoDataset", {{"frames", 9}}, {{"folder", made->at("folder")}}, &recorder);
  QVERIFY2(dataset.ok(), dataset.ok() ? "" : dataset.error().message.c_str());
  const VideoDataset clips = *engine::value_as<VideoDataset>(dataset->at("dataset"));
  QCOMPARE(clips.clips.size(), std::size_t(3));
  QCOMPARE(clips.clips[0].frame_count, 9);
  QCOMPARE(clips.clips[0].width, 96);
  // The clips are the demo scenes of the same seed, in order, captioned as the scenes say.
  train::SceneOptions scenes;
  scenes.frames = 9;
  scenes.width = 96;
  scenes.height = 64;
  std::mt19937 random(4);
  for (const auto& clip : clips.clips) {
    const std::string expected = train::plan_scene(random, scenes).caption();
    QCOMPARE(clip.caption, expected);
  }
  // The same settings again: reused, nothing rewritten.
  const auto mtime = fs::last_write_time(clips.clips[0].path);
  QVERIFY(run("MakeDemoDataset", params, {}, &recorder).ok());
  QVERIFY(fs::last_write_time(clips.clips[0].path) == mtime);
  // Other settings, or a folder holding anything else: refused, nothing touched.
  nlohmann::json other = params;
  other["seed"] = 5;
  auto refused = run("MakeDemoDataset", other, {}, &recorder);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("already holds other files") != std::string::npos,
           refused.error().message.c_str());
  const fs::path mine = fs::path(dir_.path().toStdString()) / "mine";
  fs::create_directories(mine);
  write_text(mine / "notes.txt", "mine");
  other["folder"] = mine.string();
  QVERIFY(!run("MakeDemoDataset", other, {}, &recorder).ok());
  QCOMPARE(files_in(mine), std::set<std::string>{"notes.txt"});
}

engine::Value tst_dataset::training_set(const char* name) {
  Recorder recorder;
  auto dataset = load_dataset(good_dataset(name), {{"frames", 5}}, &recorder);
  if (!dataset.ok()) qFatal("%s", dataset.error().message.c_str());
  auto out = encode(dataset->at("dataset"), {{"width", 64}, {"height", 32}, {"frames", 5}}, &recorder);
  if (!out.ok()) qFatal("%s", out.error().message.c_str());
  return out->at("training_set");
}

void tst_dataset::trainReducesLossAndWritesLora() {
  const engine::Value set = training_set("train");
  const auto& input = *engine::value_as<DitHandle>(model_.at("model"));
  const at::Tensor before = input.model->named_parameters()["blocks.0.self_attn.q.weight"].clone();
  const std::size_t parameters_before = input.model->parameters().size();
  Recorder recorder;
  const nlohmann::json params = {{"steps", 40}, {"lr", 2e-3}, {"lora_rank", 4}, {"lora_alpha", 4},
                                 {"seed", 3}, {"output", "{output}/train/lora.safetensors"}};
  auto out = run("TrainWan", params, {{"model", model_.at("model")}, {"training_set", set}}, &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const std::vector<double> losses = losses_of(recorder);
  QCOMPARE(losses.size(), std::size_t(40));
  const double first = mean(losses, 0, 10), last = mean(losses, 30, 40);
  QVERIFY2(last < first * 0.95, (std::to_string(first) + " -> " + std::to_string(last)).c_str());
  // The LoRA file: ComfyUI names, rank 4.
  const std::string path = *engine::value_as<std::string>(out->at("path"));
  QCOMPARE(path, dir_.path().toStdString() + "/train/lora.safetensors");
  const auto file = model_io::SafetensorsFile::open(path);
  QVERIFY(file.contains("diffusion_model.blocks.0.self_attn.q.lora_down.weight"));
  QVERIFY(file.contains("diffusion_model.blocks.0.self_attn.q.lora_up.weight"));
  QVERIFY(file.contains("diffusion_model.blocks.0.self_attn.q.alpha"));
  QCOMPARE(file.entry("diffusion_model.blocks.0.self_attn.q.lora_down.weight").shape.at(0), int64_t(4));
  // The input model is untouched; the output is another model.
  QVERIFY(input.model->named_parameters()["blocks.0.self_attn.q.weight"].equal(before));
  QCOMPARE(input.model->parameters().size(), parameters_before);
  const auto& trained = *engine::value_as<DitHandle>(out->at("model"));
  QVERIFY(trained.model.get() != input.model.get());
  QVERIFY(!train::attached_lora_modules(*trained.model).empty());
  QVERIFY(train::attached_lora_modules(*input.model).empty());
  // A second run with the same output: the first file is kept (naming increment).
  nlohmann::json again = params;
  again["steps"] = 2;
  out = run("TrainWan", again, {{"model", model_.at("model")}, {"training_set", set}}, &recorder);
  QVERIFY(out.ok());
  QCOMPARE(*engine::value_as<std::string>(out->at("path")), dir_.path().toStdString() + "/train/lora_00002.safetensors");
}

void tst_dataset::trainCancelLeavesResumableCheckpoint() {
  const engine::Value set = training_set("cancel");
  const std::string checkpoints = dir_.path().toStdString() + "/checkpoints";
  Recorder recorder;
  recorder.cancel_after_progress = 3;
  nlohmann::json params = {{"steps", 8}, {"lr", 1e-3}, {"lora_rank", 4}, {"checkpoint_folder", checkpoints},
                           {"output", "{output}/cancel/lora.safetensors"}};
  auto out = run("TrainWan", params, {{"model", model_.at("model")}, {"training_set", set}}, &recorder);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(message.find("Training cancelled after step 3") != std::string::npos, message.c_str());
  const auto quote = message.find("checkpoint '");
  QVERIFY2(quote != std::string::npos, message.c_str());
  const std::string checkpoint = message.substr(quote + 12, message.find('\'', quote + 12) - quote - 12);
  QVERIFY2(fs::is_regular_file(checkpoint), checkpoint.c_str());
  QVERIFY(!fs::exists(dir_.path().toStdString() + "/cancel/lora.safetensors"));
  // Resumed: steps 4..8 only, then the LoRA is written.
  Recorder resumed;
  params["resume"] = checkpoint;
  out = run("TrainWan", params, {{"model", model_.at("model")}, {"training_set", set}}, &resumed);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(resumed.progress.front().first, std::int64_t(4));
  QCOMPARE(resumed.progress.back(), std::make_pair(std::int64_t(8), std::int64_t(8)));
  QVERIFY(fs::is_regular_file(dir_.path().toStdString() + "/cancel/lora.safetensors"));
}

// Encode Dataset encodes the dropout prompt (by default the sampler's negative prompt); Train Wan's
// caption_dropout trains on it: with it, the same seed gives other losses, and each run repeats.
void tst_dataset::trainCaptionDropoutUsesTheDropoutPrompt() {
  const engine::Value value = training_set("dropout");
  const TrainingSet& set = *engine::value_as<TrainingSet>(value);
  const auto& encoder = *engine::value_as<TextEncoderHandle>(model_.at("text_encoder"));
  QVERIFY(set.dropout_context.defined());
  QVERIFY(at::equal(set.dropout_context, encoder.encode(wan::default_negative_prompt())[0].to(at::kFloat)));
  QCOMPARE(set.dropout_context.size(1), set.samples.at(0).context_shape.at(1));

  auto losses = [&](double dropout, const char* name) {
    Recorder recorder;
    const nlohmann::json params = {{"steps", 6}, {"lr", 1e-3}, {"lora_rank", 4}, {"batch", 2}, {"seed", 5},
                                   {"caption_dropout", dropout},
                                   {"output", std::string("{output}/dropout/") + name + ".safetensors"}};
    auto out = run("TrainWan", params, {{"model", model_.at("model")}, {"training_set", value}}, &recorder);
    if (!out.ok()) qFatal("%s", out.error().message.c_str());
    return losses_of(recorder);
  };
  const std::vector<double> plain = losses(0.0, "plain"), dropped = losses(0.9, "dropped");
  QCOMPARE(dropped.size(), std::size_t(6));
  QVERIFY2(dropped != plain, "caption dropout 0.9 trained exactly as without it");
  QCOMPARE(losses(0.9, "again"), dropped);
}

// An A14B expert trains where it samples: auto follows the expert the model is (the log says the
// range), the two sides of the boundary give other losses than all levels (same seed), the auto
// run equals the explicit one, and a model that is no expert trains on all levels as before.
void tst_dataset::trainExpertKeepsToItsNoiseLevels() {
  const engine::Value set = training_set("expert");
  DitHandle low = *engine::value_as<DitHandle>(model_.at("model"));
  low.expert = WanExpert::LowNoise;
  const engine::Value low_model = engine::make_value(kModelType, low);
  auto train = [&](const engine::Value& model, const char* levels, const char* name, Recorder& recorder) {
    const nlohmann::json params = {{"steps", 3}, {"lr", 1e-3}, {"lora_rank", 4}, {"seed", 5},
                                   {"noise_levels", levels},
                                   {"output", std::string("{output}/expert/") + name + ".safetensors"}};
    auto out = run("TrainWan", params, {{"model", model}, {"training_set", set}}, &recorder);
    if (!out.ok()) qFatal("%s", out.error().message.c_str());
    return losses_of(recorder);
  };
  Recorder automatic, low_levels, high_levels, all_levels, plain;
  const std::vector<double> auto_losses = train(low_model, "auto", "auto", automatic);
  QVERIFY(std::any_of(automatic.infos.begin(), automatic.infos.end(), [](const std::string& line) {
    return line.find("Training the low-noise expert's timesteps: below 875 (expert_boundary 0.875).") !=
           std::string::npos;
  }));
  QCOMPARE(train(low_model, "low_noise", "low", low_levels), auto_losses);
  const std::vector<double> high = train(low_model, "high_noise", "high", high_levels);
  const std::vector<double> all = train(low_model, "all", "all", all_levels);
  QVERIFY(high != auto_losses && all != auto_losses && high != all);
  QCOMPARE(train(model_.at("model"), "auto", "plain", plain), all);  // no expert: all levels
}

// Wan2.2-I2V-A14B on the tiny random model: Encode Dataset's mode i2v with its Wan2.1 VAE stores
// each clip's image conditioning (the mask, then the latent of the first frame and zero frames, whose
// first latent frame is the clip's own); Train Wan trains the expert on it and validation samples
// with it.
void tst_dataset::trainImageConditionedA14b() {
  const fs::path model_dir = fs::path(dir_.path().toStdString()) / "i2v-a14b-model";
  RandomModelOptions options;
  options.config = "a14b-i2v";
  options.tiny = true;
  options.tokenizer = std::string(kDemoModel) + "/spiece.model";
  write_random_model(model_dir.string(), options);
  Recorder recorder;
  auto loaded = run("LoadWanModel", {{"model_path", model_dir.string()}, {"device", "cpu"}}, {}, &recorder);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
  auto dataset = load_dataset(good_dataset("i2v-a14b-clips"), {{"frames", 5}}, &recorder);
  QVERIFY(dataset.ok());
  auto encoded = run("EncodeDataset", {{"width", 64}, {"height", 32}, {"frames", 5}, {"mode", "i2v"}},
                     {{"vae", loaded->at("vae")}, {"text_encoder", loaded->at("text_encoder")},
                      {"dataset", dataset->at("dataset")}},
                     &recorder);
  QVERIFY2(encoded.ok(), encoded.ok() ? "" : encoded.error().message.c_str());
  const TrainingSet& set = *engine::value_as<TrainingSet>(encoded->at("training_set"));
  for (const TrainingSampleFile& file : set.samples) {
    QCOMPARE(file.condition_shape, (std::vector<int64_t>{20, 2, 4, 8}));
    const TrainingSampleData data = read_training_sample(file.path);
    QVERIFY(at::equal(data.condition.narrow(0, 0, 4), sampling::i2v_mask(5, 4, 8)));
    const double err = (data.condition.narrow(0, 4, 16).select(1, 0) - data.latent.select(1, 0)).abs().max().item<double>();
    QVERIFY2(err < 1e-5, qPrintable(QString::number(err)));
  }
  Conditioning prompt;
  prompt.context = set.dropout_context.unsqueeze(0);
  const nlohmann::json params = {{"steps", 4}, {"lr", 2e-3}, {"lora_rank", 4}, {"seed", 5},
                                 {"output", "{output}/i2v-a14b/lora.safetensors"}, {"validate_every", 4},
                                 {"validation_steps", 2}, {"validation_folder", "{output}/i2v-a14b/clips"}};
  Recorder training;
  auto trained = run("TrainWan", params,
                     {{"model", loaded->at("model")}, {"training_set", encoded->at("training_set")},
                      {"validation", engine::make_value(kConditioningType, prompt)}, {"vae", loaded->at("vae")}},
                     &training);
  QVERIFY2(trained.ok(), trained.ok() ? "" : trained.error().message.c_str());
  const std::vector<double> losses = losses_of(training);
  QCOMPARE(losses.size(), std::size_t(4));
  for (double l : losses) QVERIFY(std::isfinite(l));
  QCOMPARE(training.previews.size(), std::size_t(1));
  // The high-noise expert distils from the same clips, their conditioning in every role's calls.
  const nlohmann::json distil = {{"prompts", ""}, {"negative", "blurry"}, {"method", "full"}, {"steps", 2},
                                 {"critic_updates", 1}, {"student_rank", 4}, {"critic_rank", 2},
                                 {"student_timesteps", "1000,950"}, {"width", 64}, {"height", 32}, {"frames", 5},
                                 {"seed", 3}, {"output", "{output}/i2v-a14b/student.safetensors"}};
  Recorder distilling;
  auto student = run("DistillWan", distil, {{"model", loaded->at("model")}, {"training_set", encoded->at("training_set")}},
                     &distilling);
  QVERIFY2(student.ok(), student.ok() ? "" : student.error().message.c_str());
  QVERIFY(fs::exists(fs::path(dir_.path().toStdString()) / "i2v-a14b" / "student.safetensors"));
}

// finetune-demo.vgflow end to end, with fewer steps: dataset made, encoded, a LoRA trained and
// written, a clip sampled with the trained model and exported.
// validate_every 2 of 4 steps: two clips sampled with the model as trained so far, decoded by the
// VAE, posted as previews and written as MP4s; training itself is the run without validation's.
void tst_dataset::trainValidationClips() {
  const engine::Value set = training_set("validate");
  Conditioning prompt;
  prompt.context = engine::value_as<TrainingSet>(set)->dropout_context.unsqueeze(0);
  const engine::Value validation = engine::make_value(kConditioningType, prompt);
  const nlohmann::json params = {{"steps", 4}, {"lr", 2e-3}, {"lora_rank", 4}, {"seed", 5},
                                 {"output", "{output}/validate/lora.safetensors"}};
  Recorder plain;
  QVERIFY(run("TrainWan", params, {{"model", model_.at("model")}, {"training_set", set}}, &plain).ok());
  nlohmann::json validating = params;
  validating["validate_every"] = 2;
  validating["validation_steps"] = 2;
  validating["validation_folder"] = "{output}/validate/clips";
  Recorder recorder;
  auto out = run("TrainWan", validating,
                 {{"model", model_.at("model")}, {"training_set", set}, {"validation", validation},
                  {"vae", model_.at("vae")}},
                 &recorder);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(losses_of(recorder), losses_of(plain));
  QCOMPARE(recorder.previews.size(), std::size_t(2));
  const auto* clip = engine::value_as<Video>(recorder.previews.back());
  QVERIFY(clip != nullptr);
  QCOMPARE(clip->frames.count, 5);  // the training size: 5 frames of 64x32
  QCOMPARE(clip->frames.width, 64);
  const fs::path clips = fs::path(dir_.path().toStdString()) / "validate" / "clips";
  for (const char* name : {"step_000002.mp4", "step_000004.mp4"}) {
    QVERIFY2(fs::file_size(clips / name) > 0, name);
  }
  // Asked for without a prompt: an error before any step, naming what to connect.
  Recorder refused;
  auto bad = run("TrainWan", validating, {{"model", model_.at("model")}, {"training_set", set}}, &refused);
  QVERIFY(!bad.ok());
  QVERIFY2(bad.error().message.find("validation prompt") != std::string::npos, bad.error().message.c_str());
  QVERIFY(losses_of(refused).empty());
}

void tst_dataset::shippedWorkflowRuns() {
  engine::LoadOptions load;
  load.registry = &registry_;
  auto loaded = engine::load_workflow_file(VIDGRAPH_SOURCE_DIR "/resources/workflows/finetune-demo.vgflow", load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  QTemporaryDir out;
  engine::RunRequest request;
  request.options.output_dir = out.path().toStdString();
  request.options.resources_dir = VIDGRAPH_BINARY_DIR "/share/vidgraph";
  request.overrides = {"train.steps=4", "train.warmup=0", "sampler.steps=2", "make_dataset.clips=2"};
  engine::Engine engine(registry_);
  std::vector<std::string> train_progress;
  nlohmann::json last_json;  // the last step's event as --json-events prints it
  engine.events().subscribe([&](const engine::Event& e) {
    if (e.kind != engine::EventKind::NodeProgress || e.node_id != "train") return;
    train_progress.push_back(e.text);
    last_json = engine::event_to_json(e);
  });
  const engine::RunResult result = engine.run(loaded->document, request);
  QVERIFY2(result.status == engine::RunStatus::Succeeded,
           result.errors.empty() ? "failed" : result.errors.front().to_string().c_str());
  QCOMPARE(train_progress.size(), std::size_t(4));
  QVERIFY2(train_progress.back().rfind("loss ", 0) == 0 && train_progress.back().find(" lr ") != std::string::npos,
           train_progress.back().c_str());
  // The numbers themselves, for a chart: the loss the text shows (to its 6 decimals), a positive lr.
  QVERIFY2(last_json["metrics"].is_object(), last_json.dump().c_str());
  QVERIFY(std::abs(last_json["metrics"]["loss"].get<double>() - std::stod(train_progress.back().substr(5))) < 1e-6);
  QVERIFY(last_json["metrics"]["lr"].get<double>() > 0.0);
  for (const char* file : {"lora.safetensors", "finetuned.mp4", "demo-dataset/demo_1.txt"}) {
    QVERIFY2(fs::is_regular_file(out.filePath(file).toStdString()), file);
  }
  QCOMPARE(files_in(out.filePath("dataset-cache").toStdString()).size(), std::size_t(2));
}

QTEST_GUILESS_MAIN(tst_dataset)
#include "tst_dataset.moc"
