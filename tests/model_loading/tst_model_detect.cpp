// Config detection from checkpoint shapes on crafted files: a zero or absurd dimension in a DiT or
// VAE checkpoint must give an error naming the tensor and its shape, never SIGFPE.
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "error_of.h"
#include "models/io/safetensors.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

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
