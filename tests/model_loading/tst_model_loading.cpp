// Wan DiT checkpoint layouts: key mapping of every naming, write + load back of every layout
// (official shards, diffusers folder and repo root, single-file repacks with prefixes, fp16/bf16),
// sparse extras (present, aliased, missing -> zero), fp8-scaled DiT files (Kijai / ComfyUI), and bad
// checkpoints -> clear errors.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "error_of.h"
#include "fp8_dit_file.h"
#include "models/device/device_memory.h"
#include "models/io/checkpoint_manifest.h"
#include "models/io/safetensors.h"
#include "models/io/tensor_file.h"
#include "models/io/scaled_fp8.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_keys.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::wan;
namespace fs = std::filesystem;

Q_DECLARE_METATYPE(vidgraph::wan::WanLayout)

namespace {

WanConfig extras_config() {
  WanConfig c = wan_tiny_config();
  c.with_gate_compress = true;
  c.with_proj_l = true;
  return c;
}

// Every parameter of a equals b's (exactly, or within tol after a cast).
void expect_same_weights(WanModelImpl& a, WanModelImpl& b, double tol) {
  auto pa = wan_named_parameters(a);
  auto pb = wan_named_parameters(b);
  QCOMPARE(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    QCOMPARE(pa[i].first, pb[i].first);
    const at::Tensor x = pa[i].second.to(at::kFloat), y = pb[i].second.to(at::kFloat);
    const bool ok = tol == 0 ? at::equal(x, y) : at::allclose(x, y, tol, tol);
    QVERIFY2(ok, pa[i].first.c_str());
  }
}

// Rewrites a single-file checkpoint with a transform on (name, tensor); returns the new path.
std::string rewrite(const std::string& src, const std::string& dst,
                    const std::function<bool(std::string&, at::Tensor&)>& edit) {
  const auto in = model_io::SafetensorsFile::open(src);
  model_io::NamedTensors out;
  for (const auto& name : in.names()) {
    std::string n = name;
    at::Tensor t = in.load(name);
    if (edit(n, t)) {
      out.emplace_back(n, t);
    }
  }
  model_io::save_safetensors(dst, out, in.metadata());
  return dst;
}

}  // namespace

class tst_model_loading : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { c10::GradMode::set_enabled(false); }
  void keyMapping_data();
  void keyMapping();
  void keyRoundTripAllNames();
  void layouts_data();
  void layouts();
  void diffusersRepoRoot();
  void diffusersSingleFile();
  void headsFromConfigJson();
  void extrasPresentAndAliased();
  void extrasMissingAreZero();
  void badCheckpoints_data();
  void badCheckpoints();
  void fp8ScaledDit_data();
  void fp8ScaledDit();
  void headersReadOncePerFile();
  void manifestFollowsFiles();
  void loadedTensorsLeaveTheMapping();
  void deviceMemoryUnavailableOnCpu();
  void deviceMemoryGib_data();
  void deviceMemoryGib();

 private:
  QTemporaryDir tmp_;
};

void tst_model_loading::keyMapping_data() {
  QTest::addColumn<QString>("canonical");
  QTest::addColumn<QString>("diffusers");
  QTest::newRow("patch") << "patch_embedding.weight"
                         << "patch_embedding.weight";
  QTest::newRow("text 0") << "text_embedding.0.weight"
                          << "condition_embedder.text_embedder.linear_1.weight";
  QTest::newRow("text 2") << "text_embedding.2.bias"
                          << "condition_embedder.text_embedder.linear_2.bias";
  QTest::newRow("time 0") << "time_embedding.0.weight"
                          << "condition_embedder.time_embedder.linear_1.weight";
  QTest::newRow("time 2") << "time_embedding.2.weight"
                          << "condition_embedder.time_embedder.linear_2.weight";
  QTest::newRow("time proj") << "time_projection.1.weight"
                             << "condition_embedder.time_proj.weight";
  QTest::newRow("modulation") << "blocks.7.modulation"
                              << "blocks.7.scale_shift_table";
  QTest::newRow("self q") << "blocks.0.self_attn.q.weight"
                          << "blocks.0.attn1.to_q.weight";
  QTest::newRow("self o") << "blocks.12.self_attn.o.bias"
                          << "blocks.12.attn1.to_out.0.bias";
  QTest::newRow("self norm_k") << "blocks.1.self_attn.norm_k.weight"
                               << "blocks.1.attn1.norm_k.weight";
  QTest::newRow("cross v") << "blocks.29.cross_attn.v.weight"
                           << "blocks.29.attn2.to_v.weight";
  QTest::newRow("norm3 -> norm2") << "blocks.3.norm3.weight"
                                  << "blocks.3.norm2.weight";
  QTest::newRow("ffn 0") << "blocks.3.ffn.0.weight"
                         << "blocks.3.ffn.net.0.proj.weight";
  QTest::newRow("ffn 2") << "blocks.3.ffn.2.bias"
                         << "blocks.3.ffn.net.2.bias";
  QTest::newRow("head mod") << "head.modulation"
                            << "scale_shift_table";
  QTest::newRow("head") << "head.head.weight"
                        << "proj_out.weight";
  QTest::newRow("gate") << "blocks.2.self_attn.to_gate_compress.weight"
                        << "blocks.2.to_gate_compress.weight";
  QTest::newRow("proj_l") << "blocks.2.self_attn.proj_l.bias"
                          << "blocks.2.attn1.proj_l.bias";
}

void tst_model_loading::keyMapping() {
  QFETCH(QString, canonical);
  QFETCH(QString, diffusers);
  QCOMPARE(QString::fromStdString(stored_key(canonical.toStdString(), KeyNaming::Diffusers)), diffusers);
  QCOMPARE(QString::fromStdString(*canonical_key(diffusers.toStdString(), KeyNaming::Diffusers)), canonical);
  QCOMPARE(QString::fromStdString(*canonical_key(canonical.toStdString(), KeyNaming::Official)), canonical);
}

void tst_model_loading::keyRoundTripAllNames() {
  const ShapeMap shapes = WanConfig::ti2v_5b().parameter_shapes();
  std::set<std::string> diffusers_names;
  for (const auto& [name, s] : extras_config().parameter_shapes()) {
    const std::string d = stored_key(name, KeyNaming::Diffusers);
    QVERIFY2(diffusers_names.insert(d).second, d.c_str());  // the mapping is injective
    QCOMPARE(*canonical_key(d, KeyNaming::Diffusers), name);
  }
  QVERIFY(!canonical_key("blocks.0.self_attn.rotary.freqs", KeyNaming::Official));
  QVERIFY(!canonical_key("blocks.x.modulation", KeyNaming::Official));
  QVERIFY(!canonical_key("freqs", KeyNaming::Diffusers));
  QCOMPARE(*canonical_key("blocks.4.to_gate_compress.weight", KeyNaming::Official),
           std::string("blocks.4.self_attn.to_gate_compress.weight"));
  QCOMPARE(*canonical_key("blocks.4.self_attn.attn_op.local_attn.proj_l.weight", KeyNaming::Official),
           std::string("blocks.4.self_attn.proj_l.weight"));
  QCOMPARE(shapes.size(), size_t(825));
}

void tst_model_loading::layouts_data() {
  QTest::addColumn<WanLayout>("layout");
  QTest::addColumn<int>("shards");
  QTest::addColumn<QString>("prefix");
  QTest::addColumn<int>("dtype");  // 0 as is, 1 fp16, 2 bf16
  QTest::addColumn<QString>("naming");
  QTest::newRow("official, 1 shard") << WanLayout::Official << 1 << "" << 0 << "official";
  QTest::newRow("official, 3 shards") << WanLayout::Official << 3 << "" << 0 << "official";
  QTest::newRow("diffusers, 2 shards") << WanLayout::Diffusers << 2 << "" << 0 << "diffusers";
  QTest::newRow("single file, comfy prefix")
      << WanLayout::SingleFile << 1 << "model.diffusion_model." << 0 << "official";
  QTest::newRow("single file, no prefix") << WanLayout::SingleFile << 1 << "" << 0 << "official";
  QTest::newRow("single file, diffusion_model. fp16")
      << WanLayout::SingleFile << 1 << "diffusion_model." << 1 << "official";
  QTest::newRow("single file bf16") << WanLayout::SingleFile << 1 << "model.diffusion_model." << 2 << "official";
}

void tst_model_loading::layouts() {
  QFETCH(WanLayout, layout);
  QFETCH(int, shards);
  QFETCH(QString, prefix);
  QFETCH(int, dtype);
  QFETCH(QString, naming);
  const WanConfig config = extras_config();
  WanModel src = wan_make_model(config, 17);
  WanSaveOptions so;
  so.layout = layout;
  so.shards = shards;
  so.prefix = prefix.toStdString();
  if (dtype == 1) so.dtype = at::kHalf;
  if (dtype == 2) so.dtype = at::kBFloat16;
  const std::string path = (tmp_.path() + "/" + QTest::currentDataTag()).toStdString() +
                           (layout == WanLayout::SingleFile ? ".safetensors" : "");
  wan_save_checkpoint(*src, path, so);

  const WanCheckpointInfo info = wan_inspect_checkpoint(path);
  QCOMPARE(info.layout, layout);
  QCOMPARE(QString(key_naming_name(info.scheme.naming)), naming);
  QCOMPARE(QString::fromStdString(info.scheme.prefix), prefix);
  QCOMPARE(int(info.files.size()), shards);
  QVERIFY(info.config == config);
  QVERIFY(info.unknown.empty());
  if (layout != WanLayout::SingleFile) {
    QVERIFY(fs::exists(fs::path(path) / "config.json"));
    QVERIFY(fs::exists(fs::path(path) / "diffusion_pytorch_model.safetensors.index.json"));
  }
  WanModel back = wan_load_model(path, WanLoadOptions{});
  QVERIFY(back->config() == config);
  expect_same_weights(*src, *back, dtype == 0 ? 0.0 : (dtype == 1 ? 2e-3 : 2e-2));
  if (dtype == 1) {
    QCOMPARE(model_io::SafetensorsFile::open(path).entry(prefix.toStdString() + "blocks.0.ffn.0.weight").dtype,
             std::string("F16"));
  }
  // Loading straight into bf16 matmul weights keeps fp32 where the model wants it.
  WanLoadOptions lo;
  lo.compute_dtype = at::kBFloat16;
  WanModel low = wan_load_model(path, lo);
  for (auto& [name, p] : wan_named_parameters(*low)) {
    if (name == "blocks.0.ffn.0.weight") QCOMPARE(p.scalar_type(), at::kBFloat16);
    if (name == "blocks.0.modulation") QCOMPARE(p.scalar_type(), at::kFloat);
    if (name == "blocks.1.self_attn.proj_l.weight") QCOMPARE(p.scalar_type(), at::kFloat);
  }
}

void tst_model_loading::diffusersRepoRoot() {
  const WanConfig config = wan_tiny_config();
  const fs::path root = (tmp_.path() + "/repo").toStdString();
  WanModel src = wan_make_model(config, 3);
  WanSaveOptions so;
  so.layout = WanLayout::Diffusers;
  so.shards = 2;
  wan_save_checkpoint(*src, (root / "transformer").string(), so);
  fs::create_directories(root / "vae");
  WanModel back = wan_load_model(root.string(), WanLoadOptions{});
  expect_same_weights(*src, *back, 0.0);
  // diffusers config.json alone (no safetensors metadata) gives the head count.
  const auto j = nlohmann::json::parse(std::ifstream(root / "transformer" / "config.json"));
  QCOMPARE(j.at("num_attention_heads").get<int64_t>(), int64_t(2));
  QCOMPARE(j.at("attention_head_dim").get<int64_t>(), int64_t(32));
}

void tst_model_loading::diffusersSingleFile() {
  // A single file with diffusers names under a `transformer.` prefix (and a stray buffer).
  WanModel src = wan_make_model(wan_tiny_config(), 12);
  const std::string a = (tmp_.path() + "/official-names.safetensors").toStdString();
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  so.prefix = "";
  wan_save_checkpoint(*src, a, so);
  const std::string b =
      rewrite(a, (tmp_.path() + "/diffusers-names.safetensors").toStdString(), [&](std::string& n, at::Tensor&) {
        n = "transformer." + stored_key(n, KeyNaming::Diffusers);
        return true;
      });
  {
    const auto in = model_io::SafetensorsFile::open(b);
    model_io::NamedTensors all;
    for (const auto& n : in.names()) all.emplace_back(n, in.load(n));
    all.emplace_back("transformer.rope.freqs", at::zeros({4}));
    model_io::save_safetensors(b, all, in.metadata());
  }
  const WanCheckpointInfo info = wan_inspect_checkpoint(b);
  QCOMPARE(info.layout, WanLayout::SingleFile);
  QCOMPARE(info.scheme.naming, KeyNaming::Diffusers);
  QCOMPARE(info.scheme.prefix, std::string("transformer."));
  QCOMPARE(info.unknown, std::vector<std::string>{"transformer.rope.freqs"});
  WanModel back = wan_load_model(b, WanLoadOptions{});
  expect_same_weights(*src, *back, 0.0);
}

void tst_model_loading::headsFromConfigJson() {
  // A single file without our metadata and dim 64: the heads cannot be guessed -> clear error;
  // an official folder with config.json but shards without metadata loads.
  WanModel src = wan_make_model(wan_tiny_config(), 8);
  const std::string a = (tmp_.path() + "/plain.safetensors").toStdString();
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  wan_save_checkpoint(*src, a, so);
  const auto in = model_io::SafetensorsFile::open(a);
  model_io::NamedTensors all;
  for (const auto& n : in.names()) all.emplace_back(n, in.load(n));
  const std::string stripped = (tmp_.path() + "/stripped.safetensors").toStdString();
  model_io::save_safetensors(stripped, all);
  const std::string err = error_of([&] { wan_inspect_checkpoint(stripped); });
  QVERIFY2(err.find("number of heads") != std::string::npos, err.c_str());

  const fs::path dir = (tmp_.path() + "/withjson").toStdString();
  fs::create_directories(dir);
  model_io::save_safetensors((dir / "weights.safetensors").string(), all);
  std::ofstream(dir / "config.json") << wan_tiny_config().to_json().dump();
  WanModel back = wan_load_model(dir.string(), WanLoadOptions{});
  expect_same_weights(*src, *back, 0.0);
}

void tst_model_loading::extrasPresentAndAliased() {
  WanModel src = wan_make_model(extras_config(), 5);
  const std::string a = (tmp_.path() + "/extras.safetensors").toStdString();
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  so.prefix = "";
  wan_save_checkpoint(*src, a, so);
  // FastVideo / TurboDiffusion spellings of the extras load into the same parameters.
  const std::string b =
      rewrite(a, (tmp_.path() + "/aliased.safetensors").toStdString(), [](std::string& n, at::Tensor&) {
        auto rep = [&](const std::string& from, const std::string& to) {
          auto pos = n.find(from);
          if (pos != std::string::npos) n.replace(pos, from.size(), to);
        };
        rep(".self_attn.to_gate_compress.", ".to_gate_compress.");
        rep(".self_attn.proj_l.", ".self_attn.attn_op.local_attn.proj_l.");
        return true;
      });
  QVERIFY(model_io::SafetensorsFile::open(b).contains("blocks.1.to_gate_compress.weight"));
  for (const std::string& path : {a, b}) {
    const WanCheckpointInfo info = wan_inspect_checkpoint(path);
    QVERIFY(info.config.with_gate_compress);
    QVERIFY(info.config.with_proj_l);
    WanModel back = wan_load_model(path, WanLoadOptions{});
    expect_same_weights(*src, *back, 0.0);
  }
}

void tst_model_loading::extrasMissingAreZero() {
  WanModel src = wan_make_model(wan_tiny_config(), 6);
  const std::string a = (tmp_.path() + "/dense.safetensors").toStdString();
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  wan_save_checkpoint(*src, a, so);
  QVERIFY(!wan_inspect_checkpoint(a).config.with_gate_compress);
  WanLoadOptions lo;
  lo.with_gate_compress = true;
  lo.with_proj_l = true;
  WanModel back = wan_load_model(a, lo);
  int extras = 0;
  for (auto& [name, p] : wan_named_parameters(*back)) {
    if (name.find("to_gate_compress") != std::string::npos || name.find("proj_l") != std::string::npos) {
      ++extras;
      QVERIFY2(p.abs().max().item<double>() == 0.0, name.c_str());
    }
  }
  QCOMPARE(extras, 2 * 4);  // 2 blocks x (gate w, b, proj_l w, b)

  // Only some blocks carry extras: present ones load, missing ones are zero.
  WanModel with = wan_make_model(extras_config(), 7);
  const std::string full = (tmp_.path() + "/extras-all.safetensors").toStdString();
  wan_save_checkpoint(*with, full, so);
  const std::string part = rewrite(
      full, (tmp_.path() + "/extras-part.safetensors").toStdString(),
      [](std::string& n, at::Tensor&) { return n.find("blocks.1.self_attn.to_gate_compress") == std::string::npos; });
  WanModel mixed = wan_load_model(part, WanLoadOptions{});
  for (auto& [name, p] : wan_named_parameters(*mixed)) {
    if (name == "blocks.1.self_attn.to_gate_compress.weight") QCOMPARE(p.abs().max().item<double>(), 0.0);
    if (name == "blocks.0.self_attn.to_gate_compress.weight") QVERIFY(p.abs().max().item<double>() > 0.0);
  }
}

void tst_model_loading::badCheckpoints_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QStringList>("needles");
  QTest::newRow("missing tensor") << 0 << QStringList{"lacks 1 tensor", "'blocks.1.ffn.2.weight'"};
  QTest::newRow("wrong shape") << 1
                               << QStringList{"'model.diffusion_model.blocks.0.self_attn.q.weight'", "[64, 32]",
                                              "expected [64, 64]"};
  QTest::newRow("integer dtype") << 2 << QStringList{"'model.diffusion_model.head.head.bias'", "I32", "float"};
  QTest::newRow("not a Wan DiT") << 3 << QStringList{"not a Wan DiT checkpoint", "patch_embedding.weight"};
  QTest::newRow("no such path") << 4 << QStringList{"does not exist"};
  QTest::newRow("index names a missing shard")
      << 5 << QStringList{"missing", "diffusion_pytorch_model-00002-of-00002.safetensors"};
  QTest::newRow("truncated file") << 6 << QStringList{"truncated.safetensors"};
  QTest::newRow("empty folder") << 7 << QStringList{"holds no .safetensors"};
  QTest::newRow("a shard that is a FIFO") << 8 << QStringList{"fifo.safetensors", "not a regular file"};
  QTest::newRow("index that is not JSON") << 9 << QStringList{"index", "not JSON"};
}

void tst_model_loading::badCheckpoints() {
  QFETCH(int, which);
  QFETCH(QStringList, needles);
  const QString tag = QString("bad-%1").arg(which);
  const std::string base = (tmp_.path() + "/" + tag).toStdString();
  WanModel src = wan_make_model(wan_tiny_config(), 1);
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  const std::string good = base + "-good.safetensors";
  wan_save_checkpoint(*src, good, so);
  std::string path = base + ".safetensors";
  switch (which) {
    case 0:
      rewrite(good, path,
              [](std::string& n, at::Tensor&) { return n != "model.diffusion_model.blocks.1.ffn.2.weight"; });
      break;
    case 1:
      rewrite(good, path, [](std::string& n, at::Tensor& t) {
        if (n == "model.diffusion_model.blocks.0.self_attn.q.weight") t = t.narrow(1, 0, 32).contiguous();
        return true;
      });
      break;
    case 2:
      rewrite(good, path, [](std::string& n, at::Tensor& t) {
        if (n == "model.diffusion_model.head.head.bias") t = t.to(at::kInt);
        return true;
      });
      break;
    case 3:
      model_io::save_safetensors(path, {{"encoder.conv1.weight", at::zeros({2, 2})}});
      break;
    case 4:
      path = base + "-nowhere";
      break;
    case 5: {
      so.layout = WanLayout::Official;
      so.shards = 2;
      wan_save_checkpoint(*src, base, so);
      fs::remove(fs::path(base) / "diffusion_pytorch_model-00002-of-00002.safetensors");
      path = base;
      break;
    }
    case 6: {
      path = (tmp_.path() + "/truncated.safetensors").toStdString();
      fs::copy_file(good, path);
      fs::resize_file(path, fs::file_size(path) / 2);
      break;
    }
    case 7:
      fs::create_directories(base);
      path = base;
      break;
    case 8:  // opening it would block the loader forever
      fs::create_directories(base);
      QCOMPARE(::mkfifo((base + "/fifo.safetensors").c_str(), 0600), 0);
      path = base;
      break;
    case 9:
      so.layout = WanLayout::Official;
      wan_save_checkpoint(*src, base, so);
      std::ofstream(fs::path(base) / "diffusion_pytorch_model.safetensors.index.json") << "{\"weight_map\": ";
      path = base;
      break;
  }
  const std::string err = error_of([&] { wan_load_model(path, WanLoadOptions{}); });
  QVERIFY2(!err.empty(), "expected an error");
  for (const QString& n : needles) {
    QVERIFY2(err.find(n.toStdString()) != std::string::npos, err.c_str());
  }
}

void tst_model_loading::fp8ScaledDit_data() {
  QTest::addColumn<int>("naming");
  QTest::newRow("scale_weight + scaled_fp8 (Kijai, ComfyUI)") << int(model_io::Fp8ScaleNaming::ScaleWeight);
  QTest::newRow("weight_scale + comfy_quant (newer ComfyUI)") << int(model_io::Fp8ScaleNaming::WeightScale);
}

// Kijai's fp8_e4m3fn_scaled layout: official names, no prefix, the blocks' linear weights F8_E4M3 with
// an F32 scalar scale each, the rest as it was. Every quantised weight loads within fp8 rounding of
// the fp32 original (and outside it without the scale), every other tensor exactly; a missing scale
// is an error naming the file and the tensor.
void tst_model_loading::fp8ScaledDit() {
  QFETCH(int, naming);
  const std::string base = (tmp_.path() + QString("/fp8-%1").arg(naming)).toStdString();
  WanModel src = wan_make_model(wan_tiny_config(), 31);
  const std::set<std::string> quantise = test::write_fp8_dit(*src, base, model_io::Fp8Format::E4M3FN,
                                                             static_cast<model_io::Fp8ScaleNaming>(naming));
  QCOMPARE(int(quantise.size()), 2 * (4 + 4 + 2));  // per block: self q k v o, cross q k v o, ffn.0 ffn.2
  const std::string fp8 = base + ".safetensors";
  WanModel got = wan_load_model(fp8, WanLoadOptions{});
  const auto want = wan_named_parameters(*src);
  const auto have = wan_named_parameters(*got);
  QCOMPARE(have.size(), want.size());
  int checked = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& name = want[i].first;
    const at::Tensor& w = want[i].second;
    const at::Tensor& g = have[i].second;
    if (!quantise.count(name)) {
      QVERIFY2(at::equal(g, w), name.c_str());
      continue;
    }
    const double scale = w.abs().max().item<double>() / 448.0;
    const at::Tensor bound = w.abs() * 0.0625 + scale * std::ldexp(1.0, -10);
    QVERIFY2(((g - w).abs() <= bound).all().item<bool>(), name.c_str());
    QVERIFY2(!at::equal(g, w), name.c_str());  // it went through fp8
    const at::Tensor raw = model_io::SafetensorsFile::open(fp8).load(name);  // the codes' values, unscaled
    QVERIFY2(!((raw - w).abs() <= bound).all().item<bool>(), name.c_str());
    ++checked;
  }
  QCOMPARE(checked, int(quantise.size()));

  const std::string bad = base + "-noscale.safetensors";
  const char* scale = naming == int(model_io::Fp8ScaleNaming::ScaleWeight) ? "blocks.1.ffn.2.scale_weight"
                                                                          : "blocks.1.ffn.2.weight_scale";
  {  // the fp8 file less one scale; F8 tensors re-encoded from their (exact) decoded values
    const auto in = model_io::SafetensorsFile::open(fp8);
    model_io::NamedTensors out;
    std::map<std::string, std::string> dtypes;
    for (const std::string& name : in.names()) {
      if (name == scale) continue;
      const auto f8 = model_io::fp8_format_of(in.entry(name).dtype);
      out.emplace_back(name, f8 ? model_io::fp8_encode(in.load(name), *f8) : in.load(name));
      if (f8) dtypes[name] = in.entry(name).dtype;
    }
    model_io::save_safetensors(bad, out, in.metadata(), dtypes);
  }
  const std::string err = error_of([&] { wan_load_model(bad, WanLoadOptions{}); });
  QVERIFY2(err.find(bad) != std::string::npos, err.c_str());
  QVERIFY2(err.find("'blocks.1.ffn.2.weight' (F8_E4M3) has no scale") != std::string::npos, err.c_str());
}

// models/device: CPU devices never have counters; a CPU-only LibTorch has none for GPUs either.
// Inspecting and loading a sharded checkpoint, twice, reads each shard's header once; a shard
// rewritten in place is read again.
void tst_model_loading::headersReadOncePerFile() {
  const std::string path = (tmp_.path() + "/headers-once").toStdString();
  WanModel src = wan_make_model(wan_tiny_config(), 5);
  WanSaveOptions so;
  so.layout = WanLayout::Official;
  so.shards = 3;
  wan_save_checkpoint(*src, path, so);
  const int64_t before = model_io::TensorFile::header_reads();
  QCOMPARE(int(wan_inspect_checkpoint(path).files.size()), 3);
  wan_load_model(path, WanLoadOptions{});
  wan_load_model(path, WanLoadOptions{});
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(3));

  WanModel other = wan_make_model(wan_tiny_config(), 6);
  wan_save_checkpoint(*other, path, so);  // the same names, new files
  WanModel back = wan_load_model(path, WanLoadOptions{});
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(6));
  expect_same_weights(*other, *back, 0.0);
}

// A file's pages the process copied out of while loading do not stay resident beside the copy:
// the file stays open for the next load (open_shared), its 64 MiB do not stay in the process.
void tst_model_loading::loadedTensorsLeaveTheMapping() {
  auto rss_file_kib = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
    }
    return -1LL;
  };
  if (rss_file_kib() < 0) QSKIP("this kernel does not report RssFile in /proc/self/status");
  const std::string path = (tmp_.path() + "/pages.safetensors").toStdString();
  const at::Tensor big = at::arange(int64_t(16) << 20, at::kFloat);  // 64 MiB
  model_io::save_safetensors(path, {{"big", big}});
  const auto file = model_io::TensorFile::open_shared(path);
  const long long before = rss_file_kib();
  const at::Tensor loaded = file->load("big", at::kCPU, std::nullopt);
  const long long grown_mib = (rss_file_kib() - before) / 1024;
  QVERIFY(at::equal(loaded, big));
  QVERIFY2(grown_mib < 8, qPrintable(QString("the process kept %1 MiB of the mapping resident").arg(grown_mib)));
}

// The checkpoint manifest of a sharded DiT: its files in load order and their headers, read once;
// asked again while nothing changed, the same object; its folder changed, listed again; the files
// rewritten, a new manifest that reads the new headers, with a new fingerprint.
void tst_model_loading::manifestFollowsFiles() {
  const std::string path = (tmp_.path() + "/manifest").toStdString();
  WanSaveOptions so;
  so.layout = WanLayout::Official;
  so.shards = 2;
  wan_save_checkpoint(*wan_make_model(wan_tiny_config(), 7), path, so);
  const model_io::CheckpointPaths paths{path, "", "", "", ""};
  const int64_t before = model_io::TensorFile::header_reads();
  const auto first = model_io::checkpoint_manifest(paths);
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(2));
  const model_io::ManifestPart* dit = first->part(model_io::kRoleDit);
  QVERIFY(dit != nullptr && first->part(model_io::kRoleVae) == nullptr);
  QCOMPARE(dit->headers.size(), std::size_t(2));
  QCOMPARE(dit->headers.front()->path(), dit->files.weights.front());
  QVERIFY2(dit->detected.rfind("wan", 0) == 0, dit->detected.c_str());
  QCOMPARE(first->files().size(), std::size_t(4));  // index, config.json, two shards
  QVERIFY2(first->fingerprint.find("config.json=") != std::string::npos, first->fingerprint.c_str());

  QCOMPARE(model_io::checkpoint_manifest(paths).get(), first.get());
  wan_inspect_checkpoint(path);  // the loader's inspection gets the manifest's headers
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(2));

  // A file added beside the shards: the folder is listed again (a new manifest), its files unchanged.
  std::ofstream(path + "/notes.txt") << "not weights";
  const auto relisted = model_io::checkpoint_manifest(paths);
  QVERIFY(relisted.get() != first.get());
  QCOMPARE(relisted->fingerprint, first->fingerprint);
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(2));

  wan_save_checkpoint(*wan_make_model(wan_tiny_config(), 8), path, so);  // the same names, new files
  const auto second = model_io::checkpoint_manifest(paths);
  QVERIFY(second.get() != first.get());
  QVERIFY(second->fingerprint != first->fingerprint);
  QCOMPARE(model_io::TensorFile::header_reads() - before, int64_t(4));
  QVERIFY(second->part(model_io::kRoleDit)->headers.front() != dit->headers.front());
}

// The counters say why they are missing on the CPU; free memory there is the available RAM.
void tst_model_loading::deviceMemoryUnavailableOnCpu() {
  const c10::Device cpu(c10::kCPU);
  const device::DeviceMemoryStats stats = device::device_memory_stats(cpu);
  QVERIFY(!stats.available);
  QVERIFY2(stats.unavailable_reason.find("cpu") != std::string::npos, stats.unavailable_reason.c_str());
  QCOMPARE(stats.peak_bytes, int64_t(0));
  QVERIFY(!device::reset_peak_device_memory(cpu));
  if (!device::device_memory_counters_built()) {
    const c10::Device gpu(c10::kCUDA, 0);
    const device::DeviceMemoryStats on_gpu = device::device_memory_stats(gpu);
    QVERIFY(!on_gpu.available);
    QVERIFY2(on_gpu.unavailable_reason.find("neither CUDA nor ROCm") != std::string::npos,
             on_gpu.unavailable_reason.c_str());
    QVERIFY(!device::reset_peak_device_memory(gpu));
    QCOMPARE(device::free_device_memory(gpu), int64_t(-1));  // unknown: nothing can be checked
  } else if (at::hasCUDA()) {  // a GPU build on a GPU: the driver's answer, within the card
    const c10::Device gpu(c10::kCUDA, 0);
    const int64_t free = device::free_device_memory(gpu);
    QVERIFY2(free > (int64_t(1) << 30) && free < (int64_t(200) << 30), std::to_string(free).c_str());
  }
  // What a CPU load may take is the RAM still available (MemAvailable here, read twice).
  const int64_t ram = device::available_ram_bytes();
  const int64_t free = device::free_device_memory(cpu);
  QVERIFY(ram > 0);
  QVERIFY2(std::abs(double(free - ram)) < 0.1 * double(ram), std::to_string(free).c_str());
}

void tst_model_loading::deviceMemoryGib_data() {
  QTest::addColumn<qint64>("bytes");
  QTest::addColumn<QString>("text");
  QTest::newRow("zero") << qint64(0) << "0.00 GiB";
  QTest::newRow("one and a half") << qint64(1610612736) << "1.50 GiB";
  QTest::newRow("rounded") << qint64(23622320128) << "22.00 GiB";
}

void tst_model_loading::deviceMemoryGib() {
  QFETCH(qint64, bytes);
  QFETCH(QString, text);
  QCOMPARE(QString::fromStdString(device::format_gib(bytes)), text);
}

QTEST_GUILESS_MAIN(tst_model_loading)
#include "tst_model_loading.moc"
