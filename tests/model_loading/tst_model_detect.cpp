// Config detection from checkpoint shapes on crafted files: a zero or absurd dimension in a DiT or
// VAE checkpoint must give an error naming the tensor and its shape, never SIGFPE. Which Wan model
// a DiT file is, from the real names and shapes of each model's telling tensors (bf16 zeros), and
// the refusal of those Vidgraph does not run.
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "error_of.h"
#include "models/io/model_file_info.h"
#include "models/io/safetensors.h"
#include "models/io/wan_dit_identity.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QDir>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;

namespace {

// `tensors` with the tensor `name` replaced by zeros of `shape`; fails the test if it is absent.
model_io::NamedTensors with_shape(model_io::NamedTensors tensors, const std::string& name,
                                  const std::vector<int64_t>& shape) {
  bool found = false;
  for (auto& [k, t] : tensors) {
    if (k == name) {
      t = at::zeros(shape);
      found = true;
    }
  }
  if (!found) {
    throw std::runtime_error("test setup: no tensor " + name);
  }
  return tensors;
}

// The tensors that tell a Wan DiT apart: the patch embedding [dim, in, 1, 2, 2], the head
// [out * 4, dim] and the head modulation, plus `extra` names (a branch's first tensor).
model_io::NamedTensors dit_signature(int64_t dim, int64_t in, int64_t out, const std::vector<std::string>& extra) {
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  model_io::NamedTensors t = {{"model.diffusion_model.patch_embedding.weight", at::zeros({dim, in, 1, 2, 2}, bf16)},
                              {"model.diffusion_model.head.head.weight", at::zeros({out * 4, dim}, bf16)},
                              {"model.diffusion_model.head.modulation", at::zeros({1, 2, dim}, bf16)}};
  for (const std::string& name : extra) t.emplace_back("model.diffusion_model." + name, at::zeros({4}, bf16));
  return t;
}

model_io::NamedTensors read_all(const std::string& file) {
  const auto in = model_io::SafetensorsFile::open(file);
  model_io::NamedTensors out;
  for (const auto& name : in.names()) {
    out.emplace_back(name, in.load(name));
  }
  return out;
}

}  // namespace

class tst_model_detect : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    c10::GradMode::set_enabled(false);
    QVERIFY(tmp_.isValid());
  }

  void ditDimensions_data() {
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<QString>("printed");
    QTest::newRow("zero patch depth") << "patch_embedding.weight" << QList<qint64>{64, 48, 0, 2, 2} << "[64,48,0,2,2]";
    QTest::newRow("zero patch width") << "patch_embedding.weight" << QList<qint64>{64, 48, 1, 2, 0} << "[64,48,1,2,0]";
    QTest::newRow("zero width") << "patch_embedding.weight" << QList<qint64>{0, 48, 1, 2, 2} << "[0,48,1,2,2]";
    QTest::newRow("huge patch") << "patch_embedding.weight" << QList<qint64>{64, 48, 1, 2, 100}
                                << "[64,48,1,2,100]";
    QTest::newRow("zero text width") << "text_embedding.0.weight" << QList<qint64>{64, 0} << "[64,0]";
    QTest::newRow("zero ffn") << "blocks.0.ffn.0.weight" << QList<qint64>{0, 64} << "[0,64]";
  }
  void ditDimensions() {
    QFETCH(QString, tensor);
    QFETCH(QList<qint64>, shape);
    QFETCH(QString, printed);
    const std::string good = (tmp_.path() + "/dit-good.safetensors").toStdString();
    if (!QFile::exists(QString::fromStdString(good))) {
      wan::WanModel src = wan::wan_make_model(wan::wan_tiny_config(), 1);
      wan::WanSaveOptions so;
      so.layout = wan::WanLayout::SingleFile;
      wan::wan_save_checkpoint(*src, good, so);
    }
    const std::string bad = (tmp_.path() + "/dit-bad.safetensors").toStdString();
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    model_io::save_safetensors(bad, with_shape(read_all(good), "model.diffusion_model." + tensor.toStdString(), dims));
    const std::string err = error_of([&] { wan::wan_inspect_checkpoint(bad); });
    QVERIFY2(err.find("'" + tensor.toStdString() + "'") != std::string::npos, err.c_str());
    QVERIFY2(err.find(printed.toStdString()) != std::string::npos, err.c_str());
    QVERIFY2(err.find("not a valid Wan2.2 DiT checkpoint") != std::string::npos, err.c_str());
  }

  void vaeDimensions_data() {
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<QString>("expected");
    QTest::newRow("encoder.conv1 with 0 channels")
        << "encoder.conv1.weight" << QList<qint64>{0, 12, 3, 3, 3} << "dimension 0 must be positive";
    QTest::newRow("zero dim_mult (stage 0 with 0 channels)")
        << "encoder.downsamples.0.downsamples.0.residual.2.weight" << QList<qint64>{0, 8, 3, 3, 3}
        << "positive multiple of the encoder width 8";
    QTest::newRow("stage not a multiple of the width")
        << "encoder.downsamples.1.downsamples.0.residual.2.weight" << QList<qint64>{12, 16, 3, 3, 3}
        << "positive multiple of the encoder width 8";
    QTest::newRow("z of 0") << "conv2.weight" << QList<qint64>{0, 8, 1, 1, 1} << "dimension 0 must be positive";
    QTest::newRow("decoder head of rank 1") << "decoder.head.2.weight" << QList<qint64>{8} << "expected 5 dimensions";
  }
  void vaeDimensions() {
    QFETCH(QString, tensor);
    QFETCH(QList<qint64>, shape);
    QFETCH(QString, expected);
    const auto vae = vae::make_seeded_vae(vae::WanVaeConfig::tiny(), 1);
    model_io::NamedTensors params;
    for (const auto& item : vae->named_parameters(true)) {
      params.emplace_back(item.key(), item.value().detach());
    }
    const std::vector<int64_t> dims(shape.begin(), shape.end());
    const std::string bad = (tmp_.path() + "/vae-bad.safetensors").toStdString();
    model_io::save_safetensors(bad, with_shape(params, tensor.toStdString(), dims));
    const std::string err = error_of([&] { vae::load_wan_vae(bad); });
    QVERIFY2(err.find("'" + tensor.toStdString() + "'") != std::string::npos, err.c_str());
    QVERIFY2(err.find(expected.toStdString()) != std::string::npos, err.c_str());
    QVERIFY2(err.find(bad) != std::string::npos, err.c_str());
  }

  // config.json values of the wrong type or of absurd size are sentences, not nlohmann's text.
  void wanFamily_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("id");
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("runs");
    QTest::newRow("TI2V-5B") << "wan2.2_ti2v_5B_fp16.safetensors" << 3072 << 48 << 48 << QStringList{}
                             << "wan2.2-ti2v-5b" << "Wan2.2-TI2V-5B" << true;
    QTest::newRow("T2V-A14B high") << "wan2.2_t2v_high_noise_14B_fp16.safetensors" << 5120 << 16 << 16
                                   << QStringList{} << "wan2.2-t2v-a14b" << "Wan2.2-T2V-A14B (high-noise expert)" << true;
    QTest::newRow("I2V-A14B low") << "wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors" << 5120 << 36 << 16
                                  << QStringList{} << "wan2.2-i2v-a14b" << "Wan2.2-I2V-A14B (low-noise expert)" << true;
    QTest::newRow("HighNoise in the name") << "Wan2.2-T2V-A14B-HighNoise-Q8_0.safetensors" << 5120 << 16 << 16
                                     << QStringList{} << "wan2.2-t2v-a14b" << "Wan2.2-T2V-A14B (high-noise expert)" << true;
    QTest::newRow("Wan2.1 T2V 14B") << "wan2.1_t2v_14B_fp16.safetensors" << 5120 << 16 << 16 << QStringList{}
                                    << "wan2.1-t2v-14b" << "Wan2.1-T2V-14B" << true;
    QTest::newRow("Wan2.1 T2V 1.3B") << "wan2.1_t2v_1.3B_fp16.safetensors" << 1536 << 16 << 16 << QStringList{}
                                     << "wan2.1-t2v-1.3b" << "Wan2.1-T2V-1.3B" << true;
    QTest::newRow("Wan2.1 I2V") << "wan2.1_i2v_720p_14B_fp16.safetensors" << 5120 << 36 << 16
                                << QStringList{"img_emb.proj.1.weight", "blocks.0.cross_attn.k_img.weight"}
                                << "wan2.1-i2v-14b" << "Wan2.1-I2V-14B" << false;
    QTest::newRow("Wan2.1 FLF2V") << "wan2.1_flf2v_720p_14B_fp16.safetensors" << 5120 << 36 << 16
                                  << QStringList{"img_emb.emb_pos", "img_emb.proj.1.weight"} << "wan2.1-flf2v-14b"
                                  << "Wan2.1-FLF2V-14B" << false;
    QTest::newRow("VACE") << "wan2.1_vace_14B_fp16.safetensors" << 5120 << 16 << 16
                          << QStringList{"vace_patch_embedding.weight", "vace_blocks.0.before_proj.weight"}
                          << "wan-vace" << "Wan VACE" << false;
    QTest::newRow("S2V") << "wan2.2_s2v_14B_bf16.safetensors" << 5120 << 16 << 16
                         << QStringList{"casual_audio_encoder.encoder.conv1.weight"} << "wan2.2-s2v-14b"
                         << "Wan2.2-S2V-14B" << false;
    QTest::newRow("Animate") << "wan2.2_animate_14B_bf16.safetensors" << 5120 << 36 << 16
                             << QStringList{"pose_patch_embedding.weight", "motion_encoder.enc.fc.0.weight"}
                             << "wan2.2-animate-14b" << "Wan2.2-Animate-14B" << false;
  }
  // The listing (model_file_info) names the model; the DiT loader refuses what Vidgraph does not
  // run with a sentence naming it, before reading any weights.
  void wanFamily() {
    QFETCH(QString, file);
    QFETCH(int, dim);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(QStringList, extra);
    QFETCH(QString, id);
    QFETCH(QString, model);
    QFETCH(bool, runs);
    std::vector<std::string> names;
    for (const QString& e : extra) names.push_back(e.toStdString());
    const std::string path = tmp_.filePath(file).toStdString();
    model_io::save_safetensors(path, dit_signature(dim, in, out, names));
    const model_io::ModelFileInfo info = model_io::inspect_model_file(path);
    QCOMPARE(QString::fromStdString(info.detected), id);
    QCOMPARE(QString::fromStdString(info.model), model);
    QCOMPARE(info.unsupported.empty(), runs);
    model_io::ModelKind kind;
    QVERIFY(model_io::detected_kind(info, &kind) && kind == model_io::ModelKind::Dit);
    const std::string err = error_of([&] { wan::wan_inspect_checkpoint(path); });
    if (runs) {
      QVERIFY2(err.find("which Vidgraph does not run") == std::string::npos, err.c_str());
    } else {
      QVERIFY2(err.find("is " + model.toStdString() + ", which Vidgraph does not run") != std::string::npos, err.c_str());
    }
  }
  // diffusers' A14B repos: transformer/ holds the high-noise expert, transformer_2/ the low-noise one.
  void diffusersExperts() {
    const QString root = tmp_.filePath("Wan2.2-T2V-A14B-Diffusers");
    QVERIFY(QDir().mkpath(root + "/transformer") && QDir().mkpath(root + "/transformer_2"));
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
        {"patch_embedding.weight", {5120, 16, 1, 2, 2}}, {"proj_out.weight", {64, 5120}}, {"scale_shift_table", {1, 2, 5120}}};
    const model_io::WanDitIdentity high = model_io::identify_wan_dit(shapes, (root + "/transformer").toStdString());
    const model_io::WanDitIdentity low = model_io::identify_wan_dit(shapes, (root + "/transformer_2").toStdString());
    QCOMPARE(QString::fromStdString(model_io::wan_dit_description(high)), QString("Wan2.2-T2V-A14B (high-noise expert)"));
    QCOMPARE(QString::fromStdString(model_io::wan_dit_description(low)), QString("Wan2.2-T2V-A14B (low-noise expert)"));
    QCOMPARE(low.latent_channels, int64_t(16));
  }

  void ditConfigJson_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("expected");
    QTest::newRow("string width") << QByteArray(R"({"dim": "wide"})") << "'dim' has the value \"wide\" (a string)";
    QTest::newRow("list heads") << QByteArray(R"({"num_heads": [24]})") << "'num_heads' has the value [24]";
    QTest::newRow("absurd layers") << QByteArray(R"({"num_layers": 100000})") << "beyond any Wan model";
    QTest::newRow("absurd width") << QByteArray(R"({"dim": 4611686018427387904, "num_heads": 1})")
                                  << "beyond any Wan model";
  }
  void ditConfigJson() {
    QFETCH(QByteArray, json);
    QFETCH(QString, expected);
    const std::string err = error_of([&] {
      wan::WanConfig::from_json(nlohmann::json::parse(json.toStdString())).validate();
    });
    QVERIFY2(err.find(expected.toStdString()) != std::string::npos, err.c_str());
    QVERIFY2(err.find("json.exception") == std::string::npos, err.c_str());
  }

 private:
  QTemporaryDir tmp_;
};

QTEST_GUILESS_MAIN(tst_model_detect)
#include "tst_model_detect.moc"
