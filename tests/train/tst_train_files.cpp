// The files train produces: the LoRA in ComfyUI's layout and the full checkpoint in the official
// layout, read back by the real readers; a DiT that keeps fp8 weights trains LoRAs, saves floats.
#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>
#include <c10/core/GradMode.h>

#include <filesystem>

#include "models/io/fp8.h"
#include "models/io/safetensors.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"
#include "train_fixtures.h"
#include "tst_train.h"

using namespace vidgraph;
using namespace train_test;

void tst_train::saveLoraWritesComfyLayout() {
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 6);
  train::TrainOptions o;
  o.method = "sla_star";
  o.method_params = small_tiles();
  o.steps = 2;
  o.lr = 1e-2;
  o.lora.rank = 4;
  o.lora.alpha = 2;
  o.lora.targets = {"self_attn.q", "ffn.0"};
  train::train(*model, backend(), samples, o);
  const std::string path = temp_dir("lora") + "/wan_lora.safetensors";
  train::save_lora(*model, path);

  const auto file = model_io::SafetensorsFile::open(path);
  QCOMPARE(static_cast<int>(file.names().size()), 2 * 2 * 3 + 2 * 4);  // 2 blocks x 2 targets x 3 + extras
  for (int b = 0; b < 2; ++b) {
    const std::string q = "diffusion_model.blocks." + std::to_string(b) + ".self_attn.q";
    QCOMPARE(file.entry(q + ".lora_down.weight").shape, (std::vector<int64_t>{4, 64}));
    QCOMPARE(file.entry(q + ".lora_up.weight").shape, (std::vector<int64_t>{64, 4}));
    QCOMPARE(file.entry(q + ".alpha").shape, std::vector<int64_t>{});
    QCOMPARE(file.load(q + ".alpha").item<double>(), 2.0);
    const std::string f = "diffusion_model.blocks." + std::to_string(b) + ".ffn.0";
    QCOMPARE(file.entry(f + ".lora_down.weight").shape, (std::vector<int64_t>{4, 64}));
    QCOMPARE(file.entry(f + ".lora_up.weight").shape, (std::vector<int64_t>{128, 4}));
    const std::string attn = "diffusion_model.blocks." + std::to_string(b) + ".self_attn.";
    QCOMPARE(file.entry(attn + "to_gate_compress.weight").shape, (std::vector<int64_t>{64, 64}));
    QCOMPARE(file.entry(attn + "to_gate_compress.bias").shape, (std::vector<int64_t>{64}));
    QCOMPARE(file.entry(attn + "proj_l.weight").shape, (std::vector<int64_t>{32, 32}));
    QCOMPARE(file.entry(attn + "proj_l.bias").shape, (std::vector<int64_t>{32}));
  }
  // The stored adapter is the trained one (up moved away from its zero start).
  const auto& a = train::attached_lora_modules(*model).front().linear->adapter;
  QVERIFY(file.load("diffusion_model.blocks.0.self_attn.q.lora_up.weight").equal(a.up));
  QVERIFY(a.up.abs().sum().item<double>() > 0);

  // In bfloat16 (Train Wan's and Distill Wan's weights_dtype): the matrices and extras rounded once,
  // the alphas still float32; the file is about half as large.
  const std::string half = temp_dir("lora") + "/wan_lora_bf16.safetensors";
  train::save_lora(*model, half, {}, at::kBFloat16);
  const auto small = model_io::SafetensorsFile::open(half);
  const std::string q0 = "diffusion_model.blocks.0.self_attn.q";
  QCOMPARE(small.entry(q0 + ".lora_up.weight").dtype, std::string("BF16"));
  QCOMPARE(small.entry("diffusion_model.blocks.0.self_attn.proj_l.weight").dtype, std::string("BF16"));
  QCOMPARE(small.entry(q0 + ".alpha").dtype, std::string("F32"));
  QVERIFY(small.load(q0 + ".lora_up.weight").equal(a.up.to(at::kBFloat16)));
  QVERIFY(std::filesystem::file_size(half) < std::filesystem::file_size(path) * 6 / 10);

  wan::WanModel bare = wan::wan_make_model(small_config(), 6);
  try {
    train::save_lora(*bare, path);
    QFAIL("a model without adapters wrote a LoRA");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("no LoRA adapter") != std::string::npos, e.what());
  }
}

void tst_train::fullCheckpointRoundTrips() {
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 8);
  train::TrainOptions o;
  o.mode = train::TrainMode::Full;
  o.method = "vsa";
  o.method_params = small_tiles();
  o.steps = 2;
  o.lr = 1e-3;
  train::train(*model, backend(), samples, o);
  const std::string dir = temp_dir("full");
  train::save_full_checkpoint(*model, dir + "/full.safetensors");
  wan::WanModel loaded = wan::wan_load_model(dir + "/full.safetensors", wan::WanLoadOptions{});
  QVERIFY(loaded->config() == model->config());
  QVERIFY(loaded->config().with_gate_compress);
  auto a = wan::wan_named_parameters(*model), b = wan::wan_named_parameters(*loaded);
  QCOMPARE(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    QCOMPARE(QString::fromStdString(b[i].first), QString::fromStdString(a[i].first));
    QVERIFY2(a[i].second.equal(b[i].second), a[i].first.c_str());
  }

  // LoRA adapters are merged into the written weights: the loaded model computes what the
  // adapted one does.
  train::LoraOptions lo;
  lo.rank = 2;
  lo.targets = {"self_attn.*", "ffn.2"};
  train::attach_lora(*model, lo, 1);
  for (const auto& m : train::attached_lora_modules(*model)) {
    m.linear->adapter.up = randn_seeded(m.linear->adapter.up.sizes(), 77) * 0.1;
  }
  train::save_full_checkpoint(*model, dir + "/merged.safetensors");
  wan::WanModel merged = wan::wan_load_model(dir + "/merged.safetensors", wan::WanLoadOptions{});
  const at::Tensor x = randn_seeded({1, 4, 4, 8, 8}, 2);
  const at::Tensor t = at::full({1, 4}, 500.0f);
  const at::Tensor ctx = randn_seeded({1, 3, 16}, 3);
  c10::NoGradGuard no_grad;
  const at::Tensor ya = model->forward(x, t, ctx, wan::AttentionRun{});
  const at::Tensor yb = merged->forward(x, t, ctx, wan::AttentionRun{});
  QVERIFY2(rel_err(yb, ya) < 1e-5, qPrintable(QString::number(rel_err(yb, ya))));
}

// A layer that keeps fp8 codes (a DiT loaded with keep_fp8): a LoRA on it trains and its codes stay
// as they were; full fine-tuning is refused before any step, naming the layer; the full checkpoint
// holds the looked-up weight plus the adapter.
void tst_train::keptFp8WeightsTrainLorasOnly() {
  const auto samples = make_samples(2);
  wan::WanModel model = wan::wan_make_model(small_config(), 9);
  wan::WanLinearImpl* q = wan::wan_linears_by_weight(*model).at("blocks.0.self_attn.q.weight");
  const float scale = q->weight.abs().max().item<float>() / 448.0f;
  q->keep_fp8(model_io::fp8_encode(q->weight / scale, model_io::Fp8Format::E4M3FN), model_io::Fp8Format::E4M3FN,
              scale, c10::Device(c10::kCPU));
  const at::Tensor codes = q->weight.clone();
  train::TrainOptions o;
  o.steps = 2;
  o.lr = 1e-2;
  o.lora.rank = 4;
  o.lora.targets = {"self_attn.q"};
  const train::TrainResult r = train::train(*model, backend(), samples, o);
  QCOMPARE(r.steps_done, 2);
  QVERIFY(std::isfinite(r.losses.back()));
  QVERIFY(q->adapter.up.abs().sum().item<double>() > 0);
  QVERIFY(q->weight.equal(codes));

  const std::string path = temp_dir("fp8") + "/full.safetensors";
  train::save_full_checkpoint(*model, path);
  const auto file = model_io::SafetensorsFile::open(path);
  QCOMPARE(file.entry("blocks.0.self_attn.q.weight").dtype, std::string("F32"));
  const at::Tensor merged = q->dense_weight() + at::matmul(q->adapter.up, q->adapter.down) * q->adapter.scale;
  QVERIFY(at::allclose(file.load("blocks.0.self_attn.q.weight"), merged, 1e-6, 1e-6));

  wan::WanModel fresh = wan::wan_make_model(small_config(), 9);
  wan::WanLinearImpl* k = wan::wan_linears_by_weight(*fresh).at("blocks.1.ffn.2.weight");
  k->keep_fp8(model_io::fp8_encode(k->weight, model_io::Fp8Format::E5M2), model_io::Fp8Format::E5M2, 1.0f,
              c10::Device(c10::kCPU));
  o.mode = train::TrainMode::Full;
  try {
    train::train(*fresh, backend(), samples, o);
    QFAIL("full fine-tuning of fp8 codes started");
  } catch (const std::invalid_argument& e) {
    QVERIFY2(std::string(e.what()).find("'blocks.1.ffn.2.weight'") != std::string::npos, e.what());
    QVERIFY2(std::string(e.what()).find("keep_fp8") != std::string::npos, e.what());
  }
}
