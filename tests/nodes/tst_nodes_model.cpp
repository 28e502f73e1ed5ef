// Tests the built-in model node types through a NodeContext (no engine): Wan Sampler on a tiny seeded
// DiT (bad settings, a deterministic run, cancellation), locating the model files, Load Wan Model's
// errors, peak-memory lines on the CPU and, with the demo model's tokenizer, the benchmark model
// generator and the sampler-only workflow per attention method. Shared fixtures in
// nodes_test_fixture.h; the other node types are in tst_nodes.cpp.
#include <ATen/core/Tensor.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
#include "models/wan/wan_block_swap.h"
#include "models/wan/wan_memory.h"
#include "models/wan/wan_tiny.h"
#include "nodes/session.h"
#include "models/sampling/i2v_condition.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/sampling/image_conditioning.h"
#include "nodes/sampling/latent.h"
#include "nodes/model/load_memory.h"
#include "nodes/model/model_files.h"
#include "nodes/model/model_handles.h"
#include "nodes/common/stage_memory.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"
#include "model_io_pth_writer.h"
#include "models/vae/taehv.h"
#include "models/vae/vae_checkpoint.h"
#include "nodes/sampling/video_frames.h"
#include "taehv_test_weights.h"
#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
#include "models/io/safetensors.h"
#include "models/io/tensor_file.h"
#include "nodes/demo/random_model.h"
#endif

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;
using nodes_test::make_context;
using nodes_test::Recorder;

namespace {

// A tiny DiT (48 latent channels unless given, text_dim 64) and matching embeddings.
engine::ValueMap tiny_model_inputs(int64_t latent_channels = 48) {
  wan::WanConfig config = wan::wan_tiny_config();
  config.in_dim = config.out_dim = latent_channels;
  DitHandle dit;
  dit.model = wan::wan_make_model(config, 7).ptr();
  Conditioning cond;
  cond.context = at::randn({1, 5, dit.model->config().text_dim});
  cond.context_null = at::randn({1, 3, dit.model->config().text_dim});
  return {{"model", engine::make_value(kModelType, dit)},
          {"conditioning", engine::make_value(kConditioningType, cond)}};
}

// tiny_model_inputs with Wan2.2-I2V-A14B's channels: in_dim 36 (16 noise + 4 mask + 16 image latent), out_dim 16.
engine::ValueMap tiny_i2v_inputs() {
  wan::WanConfig config = wan::wan_tiny_config();
  config.in_dim = 36;
  config.out_dim = 16;
  engine::ValueMap inputs = tiny_model_inputs(16);
  DitHandle dit;
  dit.model = wan::wan_make_model(config, 7).ptr();
  inputs["model"] = engine::make_value(kModelType, dit);
  return inputs;
}

engine::Value tiny_vae_value(const vae::WanVaeConfig& config) {
  VaeHandle vae{vae::make_seeded_vae(config, 3), "tiny", c10::Device(c10::kCPU), at::kFloat};
  return engine::make_value(kVaeType, std::move(vae), 1);
}

// A width x height image of a seeded pattern.
engine::Value tiny_image_value(int width, int height, uint64_t seed) {
  Image image{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
  for (std::size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = std::uint8_t((i * 37 + seed * 101) % 256);
  const std::size_t bytes = image.byte_size();
  return engine::make_value(kImageType, std::move(image), bytes);
}

nlohmann::json tiny_sampler_params() {
  return {{"width", 64}, {"height", 32}, {"frames", 5}, {"steps", 2}, {"attention", "full"},
          {"seed", 3}};
}

}  // namespace

class tst_nodes_model : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void samplerRejectsBadSettings_data();
  void samplerRejectsBadSettings();
  void samplerTinyRunIsDeterministic();
  void samplerWan21LatentIsEighthSize();
  void samplerI2vA14B();
  void samplerFirstFrameImage();
  void samplerTwoExperts();
  void samplerSwapsTheActiveExpert();
  void samplerCancels();
  void samplerDmdRun();
  void samplerDenseSteps();
  void lightVaeDecode();
  void modelFilesLocated();
  void loadModelErrors_data();
  void loadModelErrors();
  void stageMemorySilentOnCpu();
  void loadMemoryRefusalSays();
#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
  void randomModelTinyLoads();
  void twoExpertFolderLoadsBoth();
  void loadRefusedBeforeLoadingWhenTooBig();
  void samplerWorkflowRuns_data();
  void samplerWorkflowRuns();
  void offloadedModelSamplesTheSame();
#endif

 private:
  const engine::NodeType& type(const char* name) const { return nodes_test::find_type(registry_, name); }
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
};

void tst_nodes_model::samplerRejectsBadSettings_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("expected");
  QTest::newRow("frames not 4k+1") << QByteArray(R"({"frames": 6})") << "4k + 1";
  QTest::newRow("width not x32") << QByteArray(R"({"width": 80, "height": 32})") << "multiples of 32";
  QTest::newRow("unknown method")
      << QByteArray(R"({"attention": "nope"})") << "no method 'nope'";
  QTest::newRow("dmd steps not a list")
      << QByteArray(R"({"scheduler": "dmd", "dmd_timesteps": "1000,abc"})") << "'abc' is not a number";
  QTest::newRow("dmd steps increase")
      << QByteArray(R"({"scheduler": "dmd", "dmd_timesteps": "500,757"})") << "strictly decrease";
}

void tst_nodes_model::samplerRejectsBadSettings() {
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

void tst_nodes_model::samplerTinyRunIsDeterministic() {
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

// A DiT of Wan2.1's 16 latent channels samples for Wan2.1's VAE (8 pixels a latent cell): sides
// that are multiples of 16 are accepted and the latent is an eighth of the frame; the 5B's DiT
// refuses the same size (its VAE needs multiples of 32).
void tst_nodes_model::samplerWan21LatentIsEighthSize() {
  const engine::NodeType& t = type("WanSampler");
  nlohmann::json p = tiny_sampler_params();
  p["width"] = 48;
  p["height"] = 16;
  Recorder rec;
  auto ctx = make_context(t, p, tiny_model_inputs(16), {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(shape_text(engine::value_as<Latent>(out->at("latent"))->samples), std::string("[1, 16, 2, 2, 6]"));
  Recorder rec48;
  auto ctx48 = make_context(t, p, tiny_model_inputs(), {}, &rec48);
  auto refused = t.compute(ctx48);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("multiples of 32") != std::string::npos, refused.error().message.c_str());
  // I2V-A14B (36 input channels: noise, mask and image latent) without an image is refused, not
  // sampled as noise (samplerI2vA14B runs it with one).
  Recorder rec_i2v;
  auto ctx_i2v = make_context(t, p, tiny_i2v_inputs(), {}, &rec_i2v);
  auto refused_i2v = t.compute(ctx_i2v);
  QVERIFY(!refused_i2v.ok());
  QVERIFY2(refused_i2v.error().message.find("connect an image") != std::string::npos,
           refused_i2v.error().message.c_str());
}

// Wan2.2-I2V-A14B on a tiny DiT (in_dim 36, out_dim 16) and the tiny Wan2.1 VAE: an image gives a
// finite 16-channel latent, the same twice, and another image another latent (the conditioning
// reaches the DiT). Refused: without the VAE, with a VAE of other latents, and a 16-channel T2V DiT
// with an image (it was never trained on one).
void tst_nodes_model::samplerI2vA14B() {
  const engine::NodeType& t = type("WanSampler");
  nlohmann::json p = tiny_sampler_params();
  p["width"] = 48;
  p["height"] = 16;
  p["guidance"] = 3.5;
  auto run = [&](engine::ValueMap inputs) {
    Recorder rec;
    auto ctx = make_context(t, p, inputs, {}, &rec);
    return t.compute(ctx);
  };
  engine::ValueMap inputs = tiny_i2v_inputs();
  inputs["vae"] = tiny_vae_value(vae::WanVaeConfig::tiny21());
  inputs["image"] = tiny_image_value(48, 16, 1);
  at::Tensor first;
  for (int i = 0; i < 2; ++i) {
    auto out = run(inputs);
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
    const at::Tensor latent = engine::value_as<Latent>(out->at("latent"))->samples;
    QCOMPARE(shape_text(latent), std::string("[1, 16, 2, 2, 6]"));
    QVERIFY(latent.isfinite().all().item<bool>());
    if (i == 0) first = latent;
    else QVERIFY(at::equal(first, latent));
  }
  engine::ValueMap other = inputs;
  other["image"] = tiny_image_value(48, 16, 2);
  auto other_out = run(other);
  QVERIFY2(other_out.ok(), other_out.ok() ? "" : other_out.error().message.c_str());
  QVERIFY(!at::equal(first, engine::value_as<Latent>(other_out->at("latent"))->samples));
  auto refused = [&](engine::ValueMap in, const std::string& expected) {
    auto out = run(std::move(in));
    QVERIFY(!out.ok());
    QVERIFY2(out.error().message.find(expected) != std::string::npos, out.error().message.c_str());
  };
  engine::ValueMap no_vae = inputs;
  no_vae.erase("vae");
  refused(no_vae, "needs the VAE");
  engine::ValueMap wrong_vae = inputs;
  wrong_vae["vae"] = tiny_vae_value(vae::WanVaeConfig::tiny());
  refused(wrong_vae, "connect the VAE of the same model");
  engine::ValueMap t2v = tiny_model_inputs(16);
  t2v["vae"] = inputs.at("vae");
  t2v["image"] = inputs.at("image");
  refused(t2v, "takes no image");

  // First-last-frame to video: the conditioning is the mask with the last frame given and the VAE's
  // latent of [first, 3 zero frames, last]; the last image changes the video.
  engine::ValueMap flf = inputs;
  flf["last_image"] = tiny_image_value(48, 16, 3);
  const VaeHandle& vae = *engine::value_as<VaeHandle>(inputs.at("vae"));
  const at::Tensor head = image_video(vae, *engine::value_as<Image>(inputs.at("image")));
  const at::Tensor tail = image_video(vae, *engine::value_as<Image>(flf.at("last_image")));
  const at::Tensor y = encode_i2v_condition(vae, head, 5, {}, tail);
  const at::Tensor video = at::cat({head, at::zeros({1, 3, 3, 16, 48}), tail}, 2);
  QVERIFY(at::allclose(y.narrow(0, 4, 16), vae.vae->encode(video)[0], 1e-5, 1e-6));
  QVERIFY(at::equal(y.narrow(0, 0, 4), sampling::i2v_mask(5, 2, 6, true)));
  auto flf_out = run(flf);
  QVERIFY2(flf_out.ok(), flf_out.ok() ? "" : flf_out.error().message.c_str());
  const at::Tensor flf_latent = engine::value_as<Latent>(flf_out->at("latent"))->samples;
  QVERIFY(flf_latent.isfinite().all().item<bool>());
  QVERIFY(!at::equal(first, flf_latent));
  engine::ValueMap other_size = flf;
  other_size["last_image"] = tiny_image_value(32, 16, 3);
  refused(other_size, "size its Load Image as the first image's");
  engine::ValueMap five_b = tiny_model_inputs(8);
  five_b["vae"] = tiny_vae_value(vae::WanVaeConfig::tiny());
  five_b["image"] = tiny_image_value(48, 16, 1);
  five_b["last_image"] = tiny_image_value(48, 16, 3);
  refused(five_b, "takes a first frame only");
  p["frames"] = 1;
  refused(flf, "need at least 5 frames");
}

// TI2V-5B's image-to-video (in_dim = out_dim on the Wan2.2 VAE; here the tiny one, z 8) is unchanged
// by I2V-A14B's path: the image's latent is the sampled latent's clean first frame.
void tst_nodes_model::samplerFirstFrameImage() {
  const engine::NodeType& t = type("WanSampler");
  engine::ValueMap inputs = tiny_model_inputs(8);
  inputs["vae"] = tiny_vae_value(vae::WanVaeConfig::tiny());
  inputs["image"] = tiny_image_value(64, 32, 1);
  Recorder rec;
  auto ctx = make_context(t, tiny_sampler_params(), inputs, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const at::Tensor latent = engine::value_as<Latent>(out->at("latent"))->samples;
  QCOMPARE(shape_text(latent), std::string("[1, 8, 2, 2, 4]"));
  const VaeHandle& vae = *engine::value_as<VaeHandle>(inputs.at("vae"));
  const Image& image = *engine::value_as<Image>(inputs.at("image"));
  const at::Tensor pixels = at::from_blob(const_cast<std::uint8_t*>(image.rgb.data()), {32, 64, 3}, at::kByte);
  const at::Tensor video = (pixels.to(at::kFloat) / 127.5 - 1.0).permute({2, 0, 1}).unsqueeze(0).unsqueeze(2);
  QVERIFY(at::allclose(latent.narrow(2, 0, 1), vae.vae->encode(video), 1e-5, 1e-6));
}

// Wan2.2-A14B: a low-noise expert runs the steps below expert_boundary. A boundary under every step
// leaves the video to the model input; a copy of the model as the second expert changes nothing; a
// second expert of other weights that runs some steps changes the video; another architecture is refused.
void tst_nodes_model::samplerTwoExperts() {
  const engine::NodeType& t = type("WanSampler");
  const engine::ValueMap base = tiny_model_inputs();
  auto sample = [&](const engine::ValueMap& inputs, double boundary) -> engine::Result<engine::ValueMap> {
    nlohmann::json p = tiny_sampler_params();
    p["expert_boundary"] = boundary;
    p["guidance_low"] = 2.0;
    Recorder rec;
    auto ctx = make_context(t, p, inputs, {}, &rec);
    return t.compute(ctx);
  };
  auto latent_of = [](const engine::Result<engine::ValueMap>& r) {
    return engine::value_as<Latent>(r->at("latent"))->samples;
  };
  auto with_low = [&](const engine::Value& low) {
    engine::ValueMap inputs = base;
    inputs.emplace("low_noise_model", low);
    return inputs;
  };
  const auto single = sample(base, 0.875);
  QVERIFY2(single.ok(), single.ok() ? "" : single.error().message.c_str());
  DitHandle other;
  other.model = wan::wan_make_model(wan::wan_tiny_config(), 8).ptr();
  const engine::Value other_value = engine::make_value(kModelType, other);
  const auto never_low = sample(with_low(other_value), 0.001);
  QVERIFY2(never_low.ok(), never_low.ok() ? "" : never_low.error().message.c_str());
  QVERIFY(at::equal(latent_of(single), latent_of(never_low)));
  // The same weights as both experts with the same guidance: the same video.
  nlohmann::json p = tiny_sampler_params();
  p["expert_boundary"] = 0.999;
  p["guidance"] = p["guidance_low"] = 2.0;
  Recorder rec;
  auto ctx = make_context(t, p, with_low(base.at("model")), {}, &rec);
  const auto same = t.compute(ctx);
  QVERIFY2(same.ok(), same.ok() ? "" : same.error().message.c_str());
  p.erase("expert_boundary");
  p.erase("guidance_low");
  Recorder rec_single;
  auto ctx_single = make_context(t, p, base, {}, &rec_single);
  const auto single_guided = t.compute(ctx_single);
  QVERIFY(single_guided.ok());
  QVERIFY(at::equal(latent_of(single_guided), latent_of(same)));
  const auto switched = sample(with_low(other_value), 0.999);
  QVERIFY2(switched.ok(), switched.ok() ? "" : switched.error().message.c_str());
  QVERIFY(!at::allclose(latent_of(single), latent_of(switched)));
  QCOMPARE(engine::value_as<Latent>(switched->at("latent"))->info.at("guidance_low"), std::to_string(2.0));
  // A DiT of another architecture (Wan2.1's 16 latent channels) is not this model's expert.
  const auto refused = sample(with_low(tiny_model_inputs(16).at("model")), 0.875);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("same architecture") != std::string::npos, refused.error().message.c_str());
}

// experts_on_gpu "active": the expert that samples gets its blocks back from the host and the other
// waits with all of them there; the video is the one both resident experts make, run after run.
void tst_nodes_model::samplerSwapsTheActiveExpert() {
  const engine::NodeType& t = type("WanSampler");
  const engine::ValueMap base = tiny_model_inputs();
  const DitHandle& given = *engine::value_as<DitHandle>(base.at("model"));
  DitHandle high = given;
  high.model = std::dynamic_pointer_cast<wan::WanModelImpl>(given.model->clone());
  DitHandle low = given;
  low.model = wan::wan_make_model(wan::wan_tiny_config(), 8).ptr();
  auto sample = [&](const DitHandle& h, const DitHandle& l) {
    engine::ValueMap inputs = base;
    inputs["model"] = engine::make_value(kModelType, h);
    inputs.emplace("low_noise_model", engine::make_value(kModelType, l));
    nlohmann::json p = tiny_sampler_params();
    p["expert_boundary"] = 0.95;
    Recorder rec;
    auto ctx = make_context(t, p, inputs, {}, &rec);
    const auto out = t.compute(ctx);
    if (!out.ok()) qFatal("%s", out.error().message.c_str());
    return engine::value_as<Latent>(out->at("latent"))->samples;
  };
  const at::Tensor resident = sample(high, low);
  const int64_t layers = low.model->config().num_layers;
  high.swap_offload_blocks = low.swap_offload_blocks = 0;
  wan::wan_set_offload_blocks(*low.model, layers);  // as Load Wan Model leaves it
  for (int run = 0; run < 2; ++run) {
    QVERIFY(at::equal(sample(high, low), resident));
    QCOMPARE(high.model->options.offload_blocks, layers);  // the last steps were the low-noise expert's
    QCOMPARE(low.model->options.offload_blocks, int64_t(0));
  }
}

void tst_nodes_model::samplerCancels() {
  const engine::NodeType& t = type("WanSampler");
  Recorder rec;
  rec.cancel = true;
  auto ctx = make_context(t, tiny_sampler_params(), tiny_model_inputs(), {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find("cancelled") != std::string::npos, out.error().message.c_str());
  QVERIFY(rec.progress.empty());
}

// scheduler dmd: one progress step and one model call per listed timestep, recorded with the
// latent; the same settings give the same latent, a different list another one.
void tst_nodes_model::samplerDmdRun() {
  const engine::NodeType& t = type("WanSampler");
  nlohmann::json p = tiny_sampler_params();
  p["scheduler"] = "dmd";
  p["guidance"] = 1.0;
  p["dmd_timesteps"] = "1000, 757, 522";
  const engine::ValueMap inputs = tiny_model_inputs();  // one prompt embedding for every run
  Recorder rec;
  auto ctx = make_context(t, p, inputs, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const Latent* three = engine::value_as<Latent>(out->at("latent"));
  QCOMPARE(int(rec.progress.size()), 3);
  QCOMPARE(three->info.at("steps"), std::string("3"));
  QCOMPARE(three->info.at("scheduler"), std::string("dmd"));
  QCOMPARE(three->info.at("dmd_timesteps"), std::string("1000, 757, 522"));
  Recorder again_rec;
  auto again = make_context(t, p, inputs, {}, &again_rec);
  auto out_again = t.compute(again);
  QVERIFY(out_again.ok());
  QVERIFY(at::equal(engine::value_as<Latent>(out_again->at("latent"))->samples, three->samples));
  p["dmd_timesteps"] = "1000,500";
  Recorder rec2;
  auto ctx2 = make_context(t, p, inputs, {}, &rec2);
  auto out2 = t.compute(ctx2);
  QVERIFY2(out2.ok(), out2.ok() ? "" : out2.error().message.c_str());
  QCOMPARE(int(rec2.progress.size()), 2);
  QVERIFY(!at::equal(engine::value_as<Latent>(out2->at("latent"))->samples, three->samples));
}

// dense_steps: with every step dense, a vsa run equals the full-attention run; with none it
// differs; the dense steps are named in the progress text and logged once.
void tst_nodes_model::samplerDenseSteps() {
  const engine::NodeType& t = type("WanSampler");
  const engine::ValueMap inputs = tiny_model_inputs();  // one prompt embedding for every run
  auto run = [&](const std::string& method, int dense, Recorder& rec) {
    nlohmann::json p = tiny_sampler_params();
    p["attention"] = method;
    p["sparsity"] = 0.9;
    p["width"] = 256;  // 2 latent frames of 8x16: two VSA tiles, so vsa skips one
    p["height"] = 128;
    p["dense_steps"] = dense;
    auto ctx = make_context(t, p, inputs, {}, &rec);
    auto out = t.compute(ctx);
    if (!out.ok()) qFatal("%s", out.error().message.c_str());
    return engine::value_as<Latent>(out->at("latent"))->samples;
  };
  Recorder full_rec, dense_rec, sparse_rec, one_rec;
  const at::Tensor full = run("full", 0, full_rec);
  const at::Tensor all_dense = run("vsa", 1000, dense_rec);
  const at::Tensor sparse = run("vsa", 0, sparse_rec);
  const at::Tensor one = run("vsa", 1, one_rec);
  QVERIFY(at::equal(all_dense, full));
  QVERIFY(!at::equal(sparse, full));
  QVERIFY(!at::equal(one, full) && !at::equal(one, sparse));
  QCOMPARE(one_rec.progress_text.size(), size_t(2));
  QCOMPARE(one_rec.progress_text[0], std::string("sampling (full attention)"));
  QCOMPARE(one_rec.progress_text[1], std::string("sampling"));
  bool logged = false;
  for (const auto& line : one_rec.logs) logged = logged || line.find("Steps 1-1 of 2 use full attention") != std::string::npos;
  QVERIFY(logged);
}

// Light VAE Decode on a taew2_2-shaped .pth: the decoder's frames (1 + 4(T - 1), 16x), progress per
// chunk; errors name the path or the latent shape.
void tst_nodes_model::lightVaeDecode() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("taew2_2.pth").toStdString();
  vidgraph::test::write_pth(path, vidgraph::test::taew2_2_weights(11));
  const engine::NodeType& t = type("LightVAEDecode");
  Latent latent;
  latent.samples = at::randn({1, 48, 2, 2, 3});
  const std::size_t bytes = latent.bytes();
  engine::ValueMap inputs{{"latent", engine::make_value(kLatentType, latent, bytes)}};
  Recorder rec;
  auto ctx = make_context(t, {{"path", path}, {"device", "cpu"}, {"chunk_frames", 1}, {"fps", 16.0}}, inputs, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const Video* video = engine::value_as<Video>(out->at("video"));
  QCOMPARE(video->frames.count, 5);
  QCOMPARE(video->frames.width, 48);
  QCOMPARE(video->frames.height, 32);
  QCOMPARE(video->fps, 16.0);
  QCOMPARE(int(rec.progress.size()), 2);
  const Frames direct = video_to_frames(vae::TaehvDecoder::load(path)->decode(latent.samples));
  // Chunks convolve other shapes than the whole decode (other kernels, other rounding): on a random
  // latent a pixel now and then rounds one level apart (1 run in ~8 here failed exact equality).
  QCOMPARE(direct.rgb.size(), video->frames.rgb.size());
  int worst = 0;
  for (std::size_t i = 0; i < direct.rgb.size(); ++i) {
    worst = std::max(worst, std::abs(int(direct.rgb[i]) - int(video->frames.rgb[i])));
  }
  QVERIFY2(worst <= 1, std::to_string(worst).c_str());

  Recorder missing_rec;
  auto missing = make_context(t, {{"path", "/nonexistent/taew2_2.pth"}}, inputs, {}, &missing_rec);
  auto bad = t.compute(missing);
  QVERIFY(!bad.ok());
  QVERIFY2(bad.error().message.find("/nonexistent/taew2_2.pth") != std::string::npos, bad.error().message.c_str());
  Latent wrong;
  wrong.samples = at::randn({1, 16, 2, 2, 3});
  engine::ValueMap wrong_inputs{{"latent", engine::make_value(kLatentType, wrong, wrong.bytes())}};
  Recorder wrong_rec;
  auto wrong_ctx = make_context(t, {{"path", path}, {"device", "cpu"}}, wrong_inputs, {}, &wrong_rec);
  auto refused = t.compute(wrong_ctx);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("[1, 16, 2, 2, 3]") != std::string::npos, refused.error().message.c_str());
}

void tst_nodes_model::modelFilesLocated() {
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

void tst_nodes_model::loadModelErrors_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("expected");
  QTest::newRow("no folder") << QByteArray(R"({})") << "No model folder";
  QTest::newRow("missing folder") << QByteArray(R"({"model_path": "/nonexistent/wan"})")
                                  << "does not exist";
  QTest::newRow("missing dit file")
      << QByteArray(R"({"model_path": "/tmp", "dit": "/nonexistent/dit.safetensors"})")
      << "DiT path '/nonexistent/dit.safetensors' does not exist";
}

void tst_nodes_model::loadModelErrors() {
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
void tst_nodes_model::stageMemorySilentOnCpu() {
  const StageMemory memory(c10::Device(c10::kCPU));
  QCOMPARE(memory.line("Wan Sampler"), std::string());
  int logged = 0;
  engine::NodeContext::Hooks hooks;
  hooks.log = [&logged](engine::LogLevel, const std::string&) { ++logged; };
  const engine::NodeContext ctx("n1", "WanSampler", {}, nlohmann::json::object(), {}, hooks);
  QCOMPARE(memory.report(ctx, "Wan Sampler"), std::string());
  QCOMPARE(logged, 0);
}

// The refusal names every part and its bytes, what is free, and the settings that would fit: the
// offload_blocks count is the smallest that fits both experts (2 x 3 blocks of 1 GiB over a 2 GiB
// deficit: 1 more block each), and text_encoder_device cpu when the encoder is on the GPU.
void tst_nodes_model::loadMemoryRefusalSays() {
  constexpr int64_t kGiB = int64_t(1) << 30;
  const c10::Device gpu(c10::kCUDA, 0);
  const c10::Device cpu(c10::kCPU);
  const std::vector<LoadPart> parts = {{"DiT", gpu, 5 * kGiB, 0, true},
                                       {"low-noise expert", gpu, 5 * kGiB, 0, true},
                                       {"VAE", gpu, kGiB / 2, 0, false},
                                       {"text encoder", gpu, kGiB + kGiB / 2, 0, false}};
  LoadMemoryCheck check{gpu};
  check.device_budget = 10 * kGiB;
  check.host_budget = 100 * kGiB;
  check.block_bytes = kGiB;
  check.blocks = 5;
  const std::string refusal = check_load_memory(parts, check);
  QVERIFY2(refusal.find("The model needs about 12.00 GiB on cuda:0 for its weights (DiT 5.00 GiB, low-noise "
                        "expert 5.00 GiB, VAE 0.50 GiB, text encoder 1.50 GiB) but 10.00 GiB are free there; "
                        "nothing was loaded.") == 0,
           refusal.c_str());
  QVERIFY2(refusal.find("text_encoder_device cpu moves the text encoder's 1.50 GiB to the host.") !=
               std::string::npos, refusal.c_str());
  QVERIFY2(refusal.find("offload_blocks 1 (of 5)") != std::string::npos, refusal.c_str());
  QVERIFY2(refusal.find("keep_fp8") != std::string::npos, refusal.c_str());

  // The same parts fit a larger budget; an unknown one (-1) checks nothing.
  check.device_budget = 12 * kGiB;
  QCOMPARE(check_load_memory(parts, check), std::string());
  check.device_budget = -1;
  QCOMPARE(check_load_memory(parts, check), std::string());

  // Offloaded blocks and a CPU text encoder are checked against the RAM.
  std::vector<LoadPart> host = {{"DiT", gpu, 2 * kGiB, 3 * kGiB, true}, {"text encoder", cpu, 2 * kGiB, 0, false}};
  check.device_budget = 10 * kGiB;
  check.host_budget = 4 * kGiB;
  const std::string ram = check_load_memory(host, check);
  QVERIFY2(ram.find("The model keeps about 5.00 GiB in host memory (DiT 3.00 GiB, text encoder 2.00 GiB) but "
                    "4.00 GiB of RAM are available") == 0,
           ram.c_str());
}

#ifdef VIDGRAPH_HAVE_RANDOM_MODEL
namespace {
const std::string kDemoFolder = VIDGRAPH_BINARY_DIR "/share/vidgraph/models/wan22-tiny";

// A tiny Wan2.2-T2V-A14B in the official layout: two experts, the Wan2.1 VAE, the demo tokenizer.
RandomModelOptions tiny_a14b_options() {
  RandomModelOptions options;
  options.config = "a14b-t2v";
  options.tiny = true;
  options.tokenizer = kDemoFolder + "/spiece.model";
  return options;
}
}  // namespace

// The benchmark generator at the tiny configs: sharded files Load Wan Model reads, filled at the
// documented scale (not left uninitialised), and an encoder that encodes.
void tst_nodes_model::randomModelTinyLoads() {
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

  // The cache key, the preflight and the load read one checkpoint manifest: each DiT shard's, the
  // VAE's and each text encoder shard's header once between them.
  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  const nlohmann::json params = {{"model_path", dir.path().toStdString()}, {"device", "cpu"}};
  const int64_t headers_before = model_io::TensorFile::header_reads();
  const std::string fingerprint = t.fingerprint(params, {});
  QVERIFY(!fingerprint.empty());
  QCOMPARE(t.preflight(params, {}), std::string());
  auto ctx = make_context(t, params, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const int64_t headers = summary.dit_shards + 1 + summary.text_encoder_shards;
  QVERIFY(summary.text_encoder_shards >= 1);
  QCOMPARE(model_io::TensorFile::header_reads() - headers_before, headers);
  QCOMPARE(t.fingerprint(params, {}), fingerprint);  // the same manifest: nothing read again
  QCOMPARE(model_io::TensorFile::header_reads() - headers_before, headers);
  const DitHandle* dit = engine::value_as<DitHandle>(out->at("model"));
  QCOMPARE(dit->model->config().num_layers, wan::wan_tiny_config().num_layers);
  QCOMPARE(dit->model->config().in_dim, int64_t(8));  // the tiny VAE's z
  const TextEncoderHandle* text = engine::value_as<TextEncoderHandle>(out->at("text_encoder"));
  const at::Tensor emb = text->encode("a river in the hills");
  QCOMPARE(emb.size(2), dit->model->config().text_dim);
  QVERIFY(emb.isfinite().all().item<bool>());

  // vae_dtype is a GPU choice: asked for on the CPU, the VAE stays float32 and the log says why.
  QCOMPARE(engine::value_as<VaeHandle>(out->at("vae"))->dtype, at::kFloat);
  nlohmann::json bf16 = params;
  bf16["vae_dtype"] = "bfloat16";
  Recorder rec16;
  auto ctx16 = make_context(t, bf16, {}, {}, &rec16);
  auto out16 = t.compute(ctx16);
  QVERIFY2(out16.ok(), out16.ok() ? "" : out16.error().message.c_str());
  QCOMPARE(engine::value_as<VaeHandle>(out16->at("vae"))->dtype, at::kFloat);
  QVERIFY(std::any_of(rec16.logs.begin(), rec16.logs.end(), [](const std::string& line) {
    return line.find("vae_dtype bfloat16 is for GPUs; the CPU decodes in float32.") != std::string::npos;
  }));
}

// The official A14B layout (high_noise_model/, low_noise_model/, Wan2.1_VAE.*): one Load Wan Model
// gives the two experts, each shard's header (and the VAE's) read once; a partner that is another model is refused
// before anything loads, naming both.
void tst_nodes_model::twoExpertFolderLoadsBoth() {
  QTemporaryDir dir;
  const RandomModelOptions options = tiny_a14b_options();
  const RandomModelSummary summary = write_random_model(dir.path().toStdString(), options);
  const fs::path root(dir.path().toStdString());
  QVERIFY(fs::exists(root / "high_noise_model" / "config.json"));
  QVERIFY(fs::exists(root / "low_noise_model" / "config.json"));
  QVERIFY(fs::exists(root / "Wan2.1_VAE.safetensors"));

  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  const nlohmann::json params = {{"model_path", dir.path().toStdString()}, {"device", "cpu"}};
  const int64_t headers_before = model_io::TensorFile::header_reads();
  QCOMPARE(t.preflight(params, {}), std::string());
  auto ctx = make_context(t, params, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(model_io::TensorFile::header_reads() - headers_before,
           2 * summary.dit_shards + 1 + summary.text_encoder_shards);  // + the VAE and the text encoder
  const DitHandle* high = engine::value_as<DitHandle>(out->at("model"));
  const DitHandle* low = engine::value_as<DitHandle>(out->at("low_noise_model"));
  QVERIFY(QString::fromStdString(high->path).endsWith("high_noise_model"));
  QVERIFY(QString::fromStdString(low->path).endsWith("low_noise_model"));
  QVERIFY(high->model->config() == low->model->config());
  QCOMPARE(high->model->config().in_dim, int64_t(16));  // the Wan2.1 VAE's z
  QVERIFY(!at::equal(wan::wan_named_parameters(*high->model).front().second,
                     wan::wan_named_parameters(*low->model).front().second));  // two sets of weights
  QCOMPARE(high->expert, WanExpert::HighNoise);
  QCOMPARE(low->expert, WanExpert::LowNoise);
  QCOMPARE(low->swap_offload_blocks, int64_t(-1));
  // Progress in thousandths of the bytes of all parts, rising as each expert's weights load.
  QVERIFY(!rec.progress.empty());
  QCOMPARE(rec.progress.back(), std::make_pair(int64_t(1000), int64_t(1000)));
  std::set<int64_t> values;
  bool high_reported = false, low_reported = false;
  for (std::size_t i = 0; i < rec.progress.size(); ++i) {
    QCOMPARE(rec.progress[i].second, int64_t(1000));
    if (i > 0) QVERIFY(rec.progress[i].first >= rec.progress[i - 1].first);
    values.insert(rec.progress[i].first);
    high_reported |= rec.progress_text[i].rfind("loading the DiT: ", 0) == 0;
    low_reported |= rec.progress_text[i].rfind("loading the low-noise expert: ", 0) == 0;
  }
  QVERIFY2(values.size() > 20 && high_reported && low_reported, rec.progress_text.back().c_str());
  // A run cancelled while the first expert loads stops at its next tensor: the second never starts.
  std::vector<std::string> texts;
  bool cancel = false;
  engine::NodeContext::Hooks hooks;
  hooks.progress = [&](int64_t value, int64_t, const std::string& text, const engine::ProgressMetrics&) {
    texts.push_back(text);
    cancel = cancel || value >= 100;
  };
  hooks.cancelled = [&] { return cancel; };
  engine::NodeContext ctx_cancel("model", t.name, {}, t.params_with_defaults(params), {}, hooks);
  auto cancelled = t.compute(ctx_cancel);
  QVERIFY(!cancelled.ok());
  QCOMPARE(cancelled.error().message, std::string("Model loading cancelled."));
  QVERIFY(std::none_of(texts.begin(), texts.end(), [](const std::string& text) {
    return text.find("low-noise expert") != std::string::npos || text.find("VAE") != std::string::npos;
  }));

  // experts_on_gpu active: the low-noise expert waits with every block on the host; both swap.
  nlohmann::json one = params;
  one["experts_on_gpu"] = "active";
  Recorder rec_one;
  auto ctx_one = make_context(t, one, {}, {}, &rec_one);
  auto out_one = t.compute(ctx_one);
  QVERIFY2(out_one.ok(), out_one.ok() ? "" : out_one.error().message.c_str());
  const DitHandle* waiting = engine::value_as<DitHandle>(out_one->at("low_noise_model"));
  QCOMPARE(waiting->model->options.offload_blocks, waiting->model->config().num_layers);
  QCOMPARE(waiting->swap_offload_blocks, int64_t(0));
  QCOMPARE(engine::value_as<DitHandle>(out_one->at("model"))->swap_offload_blocks, int64_t(0));
  QVERIFY(std::any_of(rec_one.logs.begin(), rec_one.logs.end(), [](const std::string& line) {
    return line.find("experts_on_gpu active saves GPU memory only") != std::string::npos;
  }));

  // A 5B-layout DiT where the low-noise expert should be: refused, naming both folders.
  QTemporaryDir other;
  RandomModelOptions five;
  five.tiny = true;
  five.tokenizer = options.tokenizer;
  write_random_model(other.path().toStdString(), five);
  fs::remove_all(root / "low_noise_model");
  fs::create_directories(root / "low_noise_model");
  for (const auto& e : fs::directory_iterator(other.path().toStdString())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("diffusion_pytorch_model", 0) == 0 || name == "config.json") {
      fs::copy_file(e.path(), root / "low_noise_model" / name);
    }
  }
  const std::string refused = t.preflight(params, {});
  QVERIFY2(refused.find("high_noise_model") != std::string::npos && refused.find("low_noise_model") != std::string::npos &&
               refused.find("low-noise expert") != std::string::npos,
           refused.c_str());
}

// The estimate is what loading takes (the tiny expert's parameters to the byte), and a budget it
// exceeds refuses the load before any part starts loading.
void tst_nodes_model::loadRefusedBeforeLoadingWhenTooBig() {
  QTemporaryDir dir;
  const RandomModelOptions options = tiny_a14b_options();
  write_random_model(dir.path().toStdString(), options);
  const std::string high = (fs::path(dir.path().toStdString()) / "high_noise_model").string();
  wan::WanLoadOptions load;
  wan::WanModel model = wan::wan_load_model(high, load);
  int64_t bytes = 0;
  for (auto& [name, p] : wan::wan_named_parameters(*model)) bytes += p.numel() * p.element_size();
  const wan::WanLoadBytes estimate = wan::wan_estimate_load(wan::wan_inspect_checkpoint(high), load);
  QCOMPARE(estimate.device, bytes);
  QCOMPARE(estimate.host, int64_t(0));
  load.device = c10::Device(c10::kCUDA, 0);  // never used: the estimate reads no weights
  load.compute_dtype = at::kBFloat16;
  load.offload_blocks = 1;
  const wan::WanLoadBytes offloaded = wan::wan_estimate_load(wan::wan_inspect_checkpoint(high), load);
  QVERIFY(offloaded.host > 0 && offloaded.device > 0 && offloaded.device + offloaded.host < bytes);

  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  const nlohmann::json params = {{"model_path", dir.path().toStdString()}, {"device", "cpu"},
                                 {"memory_limit_gib", 0.000001}};
  auto ctx = make_context(t, params, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  for (const char* part : {"on cpu for its weights (DiT ", ", low-noise expert ", ", VAE ", ", text encoder ",
                           "of RAM are available; nothing was loaded."}) {
    QVERIFY2(message.find(part) != std::string::npos, message.c_str());
  }
  QVERIFY(std::none_of(rec.progress_text.begin(), rec.progress_text.end(),
                       [](const std::string& text) { return text.find("loading") != std::string::npos; }));
}

void tst_nodes_model::samplerWorkflowRuns_data() {
  QTest::addColumn<QString>("attention");
  QTest::addColumn<bool>("valid");
  QTest::newRow("full") << "full" << true;
  QTest::newRow("vsa") << "vsa" << true;
  QTest::newRow("sla_star") << "sla_star" << true;
  QTest::newRow("unknown method") << "dense" << false;
}

// tests/bench/graph/sampler-t2v.vgflow on the CPU demo model with the settings graph_run.sh
// overrides, plus `extra`; the latent goes to out/latent.safetensors. Sampler steps land in `steps`.
engine::RunResult run_sampler_workflow(const engine::Registry& registry, const QTemporaryDir& out,
                                       const std::vector<std::string>& extra, std::vector<std::int64_t>* steps) {
  engine::LoadOptions load;
  load.registry = &registry;
  auto loaded = engine::load_workflow_file(VIDGRAPH_SOURCE_DIR "/tests/bench/graph/sampler-t2v.vgflow", load);
  if (!loaded.ok()) throw std::runtime_error(loaded.error().to_string());
  engine::RunRequest request;
  request.options.output_dir = out.path().toStdString();
  request.options.resources_dir = VIDGRAPH_BINARY_DIR "/share/vidgraph";
  request.overrides = {"model.device=cpu", "sampler.steps=2", "sampler.frames=5",
                       "sampler.width=128", "sampler.height=64", "sampler.guidance=5",
                       "sampler.batch_cfg=true", "sampler.sparsity=0.875", "model.dtype=float32"};
  request.overrides.insert(request.overrides.end(), extra.begin(), extra.end());
  engine::Engine engine(registry);
  engine.events().subscribe([steps](const engine::Event& e) {
    if (steps && e.kind == engine::EventKind::NodeProgress && e.node_id == "sampler") steps->push_back(e.value);
  });
  return engine.run(loaded->document, request);
}

// The workflow has no media nodes (so it runs in a VIDGRAPH_MEDIA=OFF build) and validates.
void tst_nodes_model::samplerWorkflowRuns() {
  QFETCH(QString, attention);
  QFETCH(bool, valid);
  QTemporaryDir out;
  std::vector<std::int64_t> steps;
  const engine::RunResult result =
      run_sampler_workflow(registry_, out, {"sampler.attention=" + attention.toStdString()}, &steps);
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

// Block swap changes where the weights live, never the latent.
void tst_nodes_model::offloadedModelSamplesTheSame() {
  QTemporaryDir resident, offloaded;
  for (auto [dir, blocks] : {std::pair{&resident, "0"}, std::pair{&offloaded, "2"}}) {
    const engine::RunResult r =
        run_sampler_workflow(registry_, *dir, {"sampler.attention=vsa", std::string("model.offload_blocks=") + blocks},
                             nullptr);
    QVERIFY2(r.status == engine::RunStatus::Succeeded,
             r.errors.empty() ? "failed" : r.errors.front().to_string().c_str());
  }
  const auto latent = [](const QTemporaryDir& d) {
    return model_io::SafetensorsFile::open(d.filePath("latent.safetensors").toStdString())
        .load(kLatentTensorName, c10::Device(c10::kCPU), at::kFloat);
  };
  QVERIFY(at::equal(latent(resident), latent(offloaded)));
}
#endif  // VIDGRAPH_HAVE_RANDOM_MODEL

QTEST_GUILESS_MAIN(tst_nodes_model)
#include "tst_nodes_model.moc"
