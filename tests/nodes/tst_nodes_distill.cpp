// Tests Distill Wan through a NodeContext (no engine) on a tiny seeded DiT with the attention
// plugin and a stand-in text encoder: a 2-step run writes a student LoRA that Load LoRA reads and
// applies, a run record beside it, progress metrics with the generator and critic losses; validation
// previews of the student; a vsa student's trained gate in its file; cancel and resume. An empty
// prompt list, prompts without a text encoder, a method the plugin lacks and other bad settings are
// refused before any step.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "engine/node_context.h"
#include "engine/registry.h"
#include "models/train/lora.h"
#include "models/train/sparse_extras.h"
#include "models/wan/wan_lora.h"
#include "models/wan/wan_tiny.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/session.h"
#include "nodes/training/training_set.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;

namespace {

// Progress, metrics, previews and log lines of one node run.
struct Run {
  std::vector<std::int64_t> steps;
  std::vector<std::map<std::string, double>> metrics;
  std::vector<engine::Value> previews;
  std::vector<std::string> logs;
  int cancel_after_steps = -1;  // cancel once this many steps were reported
};

engine::NodeContext make_context(const engine::NodeType& type, const nlohmann::json& params,
                                 engine::ValueMap inputs, const std::string& output_dir, Run* run) {
  engine::NodeContext::Hooks hooks;
  hooks.progress = [run](std::int64_t v, std::int64_t, const std::string&, const engine::ProgressMetrics& m) {
    run->steps.push_back(v);
    run->metrics.emplace_back(m.begin(), m.end());
  };
  hooks.cancelled = [run] {
    return run->cancel_after_steps >= 0 && static_cast<int>(run->steps.size()) >= run->cancel_after_steps;
  };
  hooks.preview = [run](const engine::Value& v) { run->previews.push_back(v); };
  hooks.log = [run](engine::LogLevel, const std::string& line) { run->logs.push_back(line); };
  engine::RunOptions options;
  options.output_dir = output_dir;
  return engine::NodeContext("n1", type.name, std::move(inputs), type.params_with_defaults(params), options, hooks);
}

// A stand-in umT5: each text gets its own seeded embedding [1, 4, text_dim].
engine::Value fake_text_encoder(int64_t text_dim) {
  TextEncoderHandle encoder;
  encoder.text_dim = text_dim;
  encoder.encode = [text_dim](const std::string& text) {
    const uint64_t seed = std::hash<std::string>{}(text) % 100000;
    return at::randn({1, 4, text_dim}, at::detail::createCPUGenerator(seed));
  };
  return engine::make_value(kTextEncoderType, encoder);
}

// Small enough for seconds on the CPU: 64x32, 5 frames ([48, 2, 2, 4] latents), ranks 4 and 2.
nlohmann::json tiny_params() {
  return {{"prompts", "a red square\n\n  a blue circle  \n"}, {"negative", "blurry"}, {"method", "full"},
          {"steps", 2}, {"critic_updates", 2}, {"student_lr", 1e-3}, {"critic_lr", 1e-3},
          {"student_rank", 4}, {"critic_rank", 2}, {"guidance", 3.0}, {"student_timesteps", "1000,757,522"},
          {"width", 64}, {"height", 32}, {"frames", 5}, {"seed", 3},
          {"output", "{output}/student.safetensors"}};
}

}  // namespace

class tst_nodes_distill : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void distillWritesStudentAndRecord();
  void regressionLossIsReported();
  void loraTargetsChooseLayers();
  void validationSamplesTheStudent();
  void sparseStudentShipsItsExtras();
  void studentLeavesTheTeachersGatesOut();
  void cancelThenResume();
  void badInputsRefusedBeforeAnyStep_data();
  void badInputsRefusedBeforeAnyStep();
  void imageConditionedModelRefused();
  void imageToVideoFromTheTrainingSet();
  void oneExpertDistilsItsSide();

 private:
  engine::Result<engine::ValueMap> run(const nlohmann::json& params, engine::ValueMap inputs, Run* out);
  engine::ValueMap inputs() const;
  // Encode Dataset's output of two clips [48, 2, 2, width], written as files.
  engine::Value training_set(bool i2v, int64_t width, const char* name);

  QTemporaryDir dir_;
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
  engine::Value model_;
};

void tst_nodes_distill::initTestCase() {
  QVERIFY(dir_.isValid());
  DitHandle dit;
  dit.model = wan::wan_make_model(wan::wan_tiny_config(), 7).ptr();
  model_ = engine::make_value(kModelType, dit);
}

engine::ValueMap tst_nodes_distill::inputs() const {
  const auto& dit = *engine::value_as<DitHandle>(model_);
  return {{"model", model_}, {"text_encoder", fake_text_encoder(dit.model->config().text_dim)}};
}

engine::Result<engine::ValueMap> tst_nodes_distill::run(const nlohmann::json& params, engine::ValueMap in, Run* out) {
  const engine::NodeType& t = nodes_test::find_type(registry_, "DistillWan");
  engine::NodeContext ctx = make_context(t, params, std::move(in), dir_.path().toStdString(), out);
  return t.compute(ctx);
}

// regression_weight > 0 adds DMD1's regression to the teacher's sample: each step reports it, and the
// generator loss then includes it; at 0 (the default) no step carries one.
void tst_nodes_distill::regressionLossIsReported() {
  nlohmann::json params = tiny_params();
  params["regression_weight"] = 2.0;
  params["regression_steps"] = 2;
  params["output"] = "{output}/regression-on.safetensors";
  Run r;
  auto out = run(params, inputs(), &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(r.metrics.size(), size_t(2));
  for (const auto& m : r.metrics) {
    QVERIFY(m.count("regression_loss"));
    QVERIFY(m.at("regression_loss") > 0);
    QVERIFY(m.at("generator_loss") >= 2.0 * m.at("regression_loss"));
  }
  nlohmann::json off = tiny_params();
  off["output"] = "{output}/regression-off.safetensors";
  Run plain;
  QVERIFY(run(off, inputs(), &plain).ok());
  for (const auto& m : plain.metrics) QVERIFY(!m.count("regression_loss"));
}

// lora_targets picks the layers both roles adapt: the written student holds exactly those.
void tst_nodes_distill::loraTargetsChooseLayers() {
  nlohmann::json params = tiny_params();
  params["steps"] = 1;
  params["lora_targets"] = "cross_attn.*, ffn.*";
  params["output"] = "{output}/targets.safetensors";
  Run r;
  auto out = run(params, inputs(), &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const wan::WanLora lora = wan::wan_read_lora(*engine::value_as<std::string>(out->at("path")));
  QVERIFY(lora.modules.count("blocks.0.cross_attn.q"));
  QVERIFY(lora.modules.count("blocks.0.ffn.0") && lora.modules.count("blocks.0.ffn.2"));
  QVERIFY(!lora.modules.count("blocks.0.self_attn.q"));
}

void tst_nodes_distill::distillWritesStudentAndRecord() {
  const auto& base = *engine::value_as<DitHandle>(model_);
  const at::Tensor q_before = base.model->named_parameters()["blocks.0.self_attn.q.weight"].clone();
  Run r;
  auto out = run(tiny_params(), inputs(), &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  // One progress event per step, each with the losses and the DMD gradient norm.
  QCOMPARE(r.steps, (std::vector<std::int64_t>{1, 2}));
  for (const auto& m : r.metrics) {
    QVERIFY(m.count("generator_loss") && m.count("critic_loss") && m.count("dmd_grad_norm"));
    QVERIFY(std::isfinite(m.at("generator_loss")) && m.at("critic_loss") > 0 && m.at("dmd_grad_norm") > 0);
  }
  // The student LoRA: ComfyUI names, rank 4, read by Load LoRA's reader and applied by Load LoRA.
  const std::string path = *engine::value_as<std::string>(out->at("path"));
  QCOMPARE(path, dir_.path().toStdString() + "/student.safetensors");
  const wan::WanLora lora = wan::wan_read_lora(path);
  QVERIFY(lora.modules.count("blocks.0.self_attn.q"));
  QCOMPARE(lora.modules.at("blocks.0.self_attn.q").down.size(0), int64_t(4));
  const engine::NodeType& load = nodes_test::find_type(registry_, "LoadLoRA");
  Run loaded_run;
  engine::NodeContext lctx = make_context(load, {{"path", path}}, {{"model", model_}}, dir_.path().toStdString(),
                                          &loaded_run);
  auto loaded = load.compute(lctx);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
  const auto& with_lora = *engine::value_as<DitHandle>(loaded->at("model"));
  QVERIFY2(!with_lora.model->named_parameters()["blocks.0.self_attn.q.weight"].equal(q_before),
           "the student LoRA changed nothing");
  // The input model is untouched; the output carries the student.
  QVERIFY(base.model->named_parameters()["blocks.0.self_attn.q.weight"].equal(q_before));
  QVERIFY(train::attached_lora_modules(*base.model).empty());
  QVERIFY(!train::attached_lora_modules(*engine::value_as<DitHandle>(out->at("model"))->model).empty());
  // The run record beside it: 2 prompts (blank lines dropped), the losses the progress showed.
  std::ifstream file(dir_.path().toStdString() + "/student.json");
  QVERIFY(file.good());
  const nlohmann::json record = nlohmann::json::parse(file);
  QCOMPARE(record.at("steps_done").get<int>(), 2);
  QCOMPARE(record.at("prompts").get<int>(), 2);
  QCOMPARE(record.at("generator_losses").size(), std::size_t(2));
  QCOMPARE(record.at("critic_losses").at(1).get<double>(), r.metrics.at(1).at("critic_loss"));
  QCOMPARE(record.at("params").at("student_timesteps").get<std::string>(), std::string("1000,757,522"));
}

// validate_every 1: after each step the student samples the validation prompt with its own 3 steps;
// without a VAE the latent's projection is the preview. Validation does not change the training.
void tst_nodes_distill::validationSamplesTheStudent() {
  Run plain;
  nlohmann::json params = tiny_params();
  params["output"] = "{output}/plain.safetensors";
  QVERIFY(run(params, inputs(), &plain).ok());
  Conditioning prompt;
  prompt.context = at::randn({1, 4, 64});
  engine::ValueMap in = inputs();
  in["validation"] = engine::make_value(kConditioningType, prompt);
  params["validate_every"] = 1;
  params["output"] = "{output}/validated.safetensors";
  Run r;
  auto out = run(params, in, &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(r.previews.size(), std::size_t(2));
  QCOMPARE(r.metrics, plain.metrics);
  bool three_steps = false;
  for (const auto& line : r.logs) three_steps |= line.find("sampling 3 steps") != std::string::npos;
  QVERIFY2(three_steps, "the validation did not sample with the student's 3 steps");
}

// A vsa student at the node's sparsity: its trained gate (to_gate_compress) is part of the LoRA file.
void tst_nodes_distill::sparseStudentShipsItsExtras() {
  nlohmann::json params = tiny_params();
  params["method"] = "vsa";
  params["sparsity"] = 0.5;
  params["steps"] = 1;
  params["output"] = "{output}/vsa.safetensors";
  Run r;
  auto out = run(params, inputs(), &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(r.steps, std::vector<std::int64_t>{1});
  const wan::WanLora lora = wan::wan_read_lora(*engine::value_as<std::string>(out->at("path")));
  QVERIFY(lora.modules.count("blocks.0.self_attn.to_gate_compress"));
  QVERIFY(lora.modules.at("blocks.0.self_attn.to_gate_compress").weight.defined());
}

// A vsa-trained model (non-zero gates) distilled with a vsa teacher and an sla_star student: the
// student file carries its LoRA and proj_l, not the gates, which are the base model's own.
void tst_nodes_distill::studentLeavesTheTeachersGatesOut() {
  DitHandle dit;
  dit.model = wan::wan_make_model(wan::wan_tiny_config(), 7).ptr();
  train::add_sparse_extras(*dit.model, /*gate_compress=*/true, /*proj_l=*/false);
  {
    c10::NoGradGuard no_grad;
    for (auto& [name, p] : wan::wan_named_parameters(*dit.model)) {
      if (name.find("to_gate_compress") != std::string::npos) p.fill_(0.01);
    }
  }
  engine::ValueMap in = inputs();
  in["model"] = engine::make_value(kModelType, dit);
  nlohmann::json params = tiny_params();
  params["method"] = "sla_star";
  params["teacher_method"] = "vsa";
  params["sparsity"] = 0.5;
  params["steps"] = 1;
  params["output"] = "{output}/sla-star-student.safetensors";
  Run r;
  auto out = run(params, in, &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const wan::WanLora lora = wan::wan_read_lora(*engine::value_as<std::string>(out->at("path")));
  QVERIFY(lora.modules.count("blocks.0.self_attn.q"));
  QVERIFY(lora.modules.count("blocks.0.self_attn.proj_l"));
  QVERIFY(!lora.modules.count("blocks.0.self_attn.to_gate_compress"));
}

// Cancel after step 1 of 3: an error naming the resumable checkpoint, no student; resumed from it:
// steps 2 and 3 only, then the student is written.
void tst_nodes_distill::cancelThenResume() {
  nlohmann::json params = tiny_params();
  params["steps"] = 3;
  params["checkpoint_folder"] = "{output}/cancel-checkpoints";
  params["output"] = "{output}/cancel.safetensors";
  Run cancelled;
  cancelled.cancel_after_steps = 1;
  auto out = run(params, inputs(), &cancelled);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(message.find("Distillation cancelled after step 1") != std::string::npos, message.c_str());
  const auto quote = message.find("checkpoint '");
  QVERIFY2(quote != std::string::npos, message.c_str());
  const std::string checkpoint = message.substr(quote + 12, message.find('\'', quote + 12) - quote - 12);
  QVERIFY2(fs::is_regular_file(checkpoint), checkpoint.c_str());
  QVERIFY(!fs::exists(dir_.path().toStdString() + "/cancel.safetensors"));
  params["resume"] = checkpoint;
  Run resumed;
  out = run(params, inputs(), &resumed);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(resumed.steps, (std::vector<std::int64_t>{2, 3}));
  QVERIFY(fs::is_regular_file(dir_.path().toStdString() + "/cancel.safetensors"));
}

void tst_nodes_distill::badInputsRefusedBeforeAnyStep_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<bool>("with_encoder");
  QTest::addColumn<QString>("expected");
  QTest::newRow("empty prompt list") << QByteArray(R"({"prompts": " \n\n"})") << true << "at least one prompt";
  QTest::newRow("prompts without encoder") << QByteArray("{}") << false << "need a text encoder";
  QTest::newRow("missing prompt file") << QByteArray(R"({"prompts_file": "/nonexistent/p.txt"})") << true
                                       << "/nonexistent/p.txt";
  // A device as the prompt file would be read forever: refused before it is opened.
  QTest::newRow("device as prompt file") << QByteArray(R"({"prompts_file": "/dev/zero"})") << true
                                         << "character device";
  QTest::newRow("unknown method") << QByteArray(R"({"method": "nope"})") << true << "no method 'nope'";
  QTest::newRow("bad schedule") << QByteArray(R"({"student_timesteps": "500,757"})") << true << "student_timesteps";
  QTest::newRow("LoRA target matching nothing") << QByteArray(R"({"lora_targets": "self_attn.*, mlp.*"})") << true
                                                << "LoRA target 'mlp.*' matches no linear layer";
  QTest::newRow("frames not 4k+1") << QByteArray(R"({"frames": 6})") << true << "4k + 1";
  QTest::newRow("validation without prompt") << QByteArray(R"({"validate_every": 1})") << true << "validation prompt";
}

void tst_nodes_distill::badInputsRefusedBeforeAnyStep() {
  QFETCH(QByteArray, params);
  QFETCH(bool, with_encoder);
  QFETCH(QString, expected);
  nlohmann::json p = tiny_params();
  p.update(nlohmann::json::parse(params.toStdString()));
  engine::ValueMap in = inputs();
  if (!with_encoder) in.erase("text_encoder");
  Run r;
  auto out = run(p, in, &r);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos, out.error().message.c_str());
  QVERIFY(r.steps.empty());
}

// An I2V-A14B-style DiT (in_dim = out_dim + 20) needs image conditioning, which text prompts do not
// carry: refused with a sentence naming the prompt and where the conditioning comes from, before
// any step (tst_dataset distils one from an encoded training set).
void tst_nodes_distill::imageConditionedModelRefused() {
  wan::WanConfig config = wan::wan_tiny_config();
  config.out_dim = 16;
  config.in_dim = 36;
  DitHandle i2v;
  i2v.model = wan::wan_make_model(config, 7).ptr();
  engine::ValueMap in = inputs();
  in["model"] = engine::make_value(kModelType, i2v);
  Run r;
  auto out = run(tiny_params(), in, &r);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("('a red square') has no image conditioning, which this model takes") !=
                   std::string::npos &&
               out.error().message.find("training_set encoded with mode i2v") != std::string::npos,
           out.error().message.c_str());
  QVERIFY(r.steps.empty());
}

// A training set encoded for image-to-video gives each prompt its clip's first latent frame: the
// student distils with those images (other losses than the same captions as text-to-video), and a
// clip of another size than the student's is refused before any step, naming the prompt.
engine::Value tst_nodes_distill::training_set(bool i2v, int64_t width, const char* name) {
  const auto& dit = *engine::value_as<DitHandle>(model_);
  const int64_t text_dim = dit.model->config().text_dim;
  TrainingSet set;
  set.dropout_context = at::randn({4, text_dim}, at::detail::createCPUGenerator(1));
  for (int i = 0; i < 2; ++i) {
    TrainingSampleData data;
    data.latent = at::randn({48, 2, 2, width}, at::detail::createCPUGenerator(10 + i));
    data.context = at::randn({4, text_dim}, at::detail::createCPUGenerator(20 + i));
    data.caption = "clip " + std::to_string(i);
    data.source = data.caption;
    data.mode = i2v ? "i2v" : "t2v";
    data.settings = "{}";
    const std::string path = dir_.path().toStdString() + "/" + name + std::to_string(i) + ".safetensors";
    if (const std::string bad = write_training_sample(path, data); !bad.empty()) qFatal("%s", bad.c_str());
    set.samples.push_back({path, data.source, data.latent.sizes().vec(), data.context.sizes().vec(), i2v});
  }
  return engine::make_value(kTrainingSetType, set);
}

void tst_nodes_distill::imageToVideoFromTheTrainingSet() {
  auto distil = [&](const engine::Value& set, const char* output, Run& r) {
    nlohmann::json p = tiny_params();
    p["prompts"] = "";
    p["output"] = std::string("{output}/") + output;
    engine::ValueMap in{{"model", model_}, {"training_set", set}};
    return run(p, in, &r);
  };
  Run images, texts;
  auto with_images = distil(training_set(true, 4, "i2v"), "i2v-student.safetensors", images);
  QVERIFY2(with_images.ok(), with_images.ok() ? "" : with_images.error().message.c_str());
  QVERIFY(distil(training_set(false, 4, "t2v"), "t2v-student.safetensors", texts).ok());
  QCOMPARE(images.steps, (std::vector<std::int64_t>{1, 2}));
  QVERIFY(images.metrics.at(0).at("generator_loss") != texts.metrics.at(0).at("generator_loss"));
  Run wide;
  auto refused = distil(training_set(true, 8, "wide"), "wide-student.safetensors", wide);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("('clip 0') has a first frame that is not a latent [48, 1, 2, 4]") !=
               std::string::npos,
           refused.error().message.c_str());
  QVERIFY(wide.steps.empty());
}

// A Wan2.2-A14B expert distils its side of the boundary (noise_levels auto): the low-noise one
// from the training set's clips, at timesteps below 875; steps off its side, or no clips, are
// refused before any step. The student keeps the expert's mark for the two-expert sampler.
void tst_nodes_distill::oneExpertDistilsItsSide() {
  DitHandle low = *engine::value_as<DitHandle>(model_);
  low.expert = WanExpert::LowNoise;
  const engine::Value expert = engine::make_value(kModelType, low);
  const engine::Value clips = training_set(false, 4, "expert");
  nlohmann::json p = tiny_params();
  p["prompts"] = "";
  p["steps"] = 1;
  p["student_timesteps"] = "800,500";
  p["output"] = "{output}/low-student.safetensors";
  Run r;
  auto out = run(p, {{"model", expert}, {"training_set", clips}}, &r);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(engine::value_as<DitHandle>(out->at("model"))->expert, WanExpert::LowNoise);
  bool said = false;
  for (const std::string& line : r.logs) said |= line.find("low-noise expert's timesteps: below 875") != std::string::npos;
  QVERIFY(said);

  auto refused = [&](const nlohmann::json& params, engine::ValueMap in, const char* sentence) {
    Run none;
    auto result = run(params, std::move(in), &none);
    QVERIFY(!result.ok());
    QVERIFY2(result.error().message.find(sentence) != std::string::npos, result.error().message.c_str());
    QVERIFY(none.steps.empty());
  };
  nlohmann::json texts = p;
  texts["prompts"] = "a red square";
  refused(texts, {{"model", expert}, {"text_encoder", fake_text_encoder(low.model->config().text_dim)}},
          "('a red square') has no clip");
  nlohmann::json high = p;
  high["noise_levels"] = "high_noise";
  refused(high, {{"model", expert}, {"training_set", clips}},
          "timestep 800 is outside the expert's noise levels (from 875 to 1000)");
}

QTEST_GUILESS_MAIN(tst_nodes_distill)
#include "tst_nodes_distill.moc"
