// Tests of the restricted PyTorch `.pth` reader (models/io/pth_reader.h, zip_archive.h,
// pth_pickle.h) and of the format-detecting loader (state_dict_file.h), on files written by the
// C++ fixture tests/common/model_io_pth_writer.h in PyTorch's own layout.
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include "models/io/pth_reader.h"
#include "models/io/state_dict_file.h"
#include "model_io_pth_writer.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using vidgraph::test::PickleWriter;
using vidgraph::test::PthTensorSpec;
using Named = std::vector<std::pair<std::string, at::Tensor>>;

namespace {

std::string error_of(const std::string& path) {
  try {
    vidgraph::model_io::pth_load_state_dict(path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

Named sample_tensors() {
  return {{"encoder.conv1.weight", at::randn({4, 3, 3, 3, 3})},
          {"encoder.conv1.bias", at::arange(4, at::kFloat)},
          {"half", at::randn({5, 7}).to(at::kHalf)},
          {"bf16", at::randn({2, 3}).to(at::kBFloat16)},
          {"ids", at::arange(10, at::kLong)},
          {"scalar", at::randn({})}};
}

// A protocol-2 pickle around `body` (a string literal that may hold NUL bytes).
template <size_t N>
std::string good_pickle_with(const char (&body)[N]) {
  PickleWriter p;
  p.raw(std::string(body, N - 1));
  return p.finish();
}

}  // namespace

class tst_ModelIo : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void roundtrip_data();
  void roundtrip();
  void sharedStorageViews();
  void loadConvertsDtype();
  void rejects_data();
  void rejects();
  void truncated_data();
  void truncated();
  void compressedEntryRejected();
  void detectsFormat();

 private:
  QTemporaryDir dir_;
  std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
};

void tst_ModelIo::roundtrip_data() {
  QTest::addColumn<bool>("zip64");
  QTest::addColumn<bool>("metadata");
  QTest::newRow("zip32 + _metadata") << false << true;
  QTest::newRow("zip64 + _metadata") << true << true;
  QTest::newRow("zip64, no metadata") << true << false;
}

void tst_ModelIo::roundtrip() {
  QFETCH(bool, zip64);
  QFETCH(bool, metadata);
  const Named in = sample_tensors();
  const std::string file = path("roundtrip.pth");
  vidgraph::test::write_file(file, vidgraph::test::pth_bytes(in, zip64, metadata, "Wan2.2_VAE"));
  const Named out = vidgraph::model_io::pth_load_state_dict(file);
  QCOMPARE(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    QCOMPARE(out[i].first, in[i].first);
    QCOMPARE(out[i].second.scalar_type(), in[i].second.scalar_type());
    QCOMPARE(out[i].second.sizes().vec(), in[i].second.sizes().vec());
    QVERIFY2(at::equal(out[i].second, in[i].second), in[i].first.c_str());
  }
  const auto reader = vidgraph::model_io::PthReader::open(file);
  QVERIFY(reader.find("ids") != nullptr);
  QVERIFY(reader.find("missing") == nullptr);
}

void tst_ModelIo::sharedStorageViews() {
  // One storage of 24 floats; "t" is a transposed 3x4 view at offset 6, "row" a slice at offset 20.
  const at::Tensor base = at::arange(24, at::kFloat);
  std::vector<PthTensorSpec> specs = {{"t", "FloatStorage", "0", 24, 6, {3, 4}, {1, 3}},
                                      {"row", "FloatStorage", "0", 24, 20, {4}, {1}}};
  const std::string storage(static_cast<const char*>(base.data_ptr()), size_t(base.nbytes()));
  const std::string file = path("views.pth");
  vidgraph::test::write_file(
      file, vidgraph::test::pth_zip(
                {{"archive/data.pkl", PickleWriter::state_dict(specs, true)}, {"archive/data/0", storage}}, false));
  const Named out = vidgraph::model_io::pth_load_state_dict(file);
  QVERIFY(at::equal(out[0].second, base.narrow(0, 6, 12).view({4, 3}).t()));
  QVERIFY(out[0].second.is_contiguous());
  QVERIFY(at::equal(out[1].second, base.narrow(0, 20, 4)));
}

void tst_ModelIo::loadConvertsDtype() {
  const Named in = {{"w", at::randn({3, 5})}};
  const std::string file = path("convert.pth");
  vidgraph::test::write_pth(file, in);
  const Named out = vidgraph::model_io::pth_load_state_dict(file, c10::Device(c10::kCPU), at::kBFloat16);
  QCOMPARE(out[0].second.scalar_type(), at::kBFloat16);
  QVERIFY(at::equal(out[0].second, in[0].second.to(at::kBFloat16)));
}

void tst_ModelIo::rejects_data() {
  QTest::addColumn<QByteArray>("file");
  QTest::addColumn<QString>("expected");
  auto zip = [](const std::string& pickle, std::vector<std::pair<std::string, std::string>> extra = {}) {
    if (!pickle.empty()) {
      extra.insert(extra.begin(), {"archive/data.pkl", pickle});
    }
    const std::string z = vidgraph::test::pth_zip(extra, false);
    return QByteArray(z.data(), int(z.size()));
  };
  QTest::newRow("os.system GLOBAL") << zip(good_pickle_with("cos\nsystem\nX\x02\x00\x00\x00ls\x85R"))
                                    << "global 'os.system' is not allowed";
  QTest::newRow("builtins.eval STACK_GLOBAL") << zip(good_pickle_with("\x8c\x08"
                                                                      "builtins\x8c\x04"
                                                                      "eval\x93"))
                                              << "global 'builtins.eval' is not allowed";
  QTest::newRow("INST opcode") << zip(good_pickle_with("(ios\nsystem\n")) << "opcode 0x69 is not allowed";
  QTest::newRow("NEWOBJ opcode") << zip(good_pickle_with("})\x81")) << "opcode 0x81 is not allowed";
  QTest::newRow("storage type called") << zip(good_pickle_with("ctorch\nFloatStorage\n)R"))
                                       << "'torch.FloatStorage' cannot be called";
  QTest::newRow("top level is a list") << zip(good_pickle_with("]")) << "does not hold a state dict";
  QTest::newRow("value is an int") << zip(good_pickle_with("}X\x01\x00\x00\x00kK\x05s")) << "'k' is not a tensor";
  QTest::newRow("bad persistent id") << zip(good_pickle_with("X\x03\x00\x00\x00"
                                                             "abc\x85Q"))
                                     << "persistent id that is not";
  QTest::newRow("stack underflow") << zip(good_pickle_with("R")) << "stack underflow";
  QTest::newRow("unknown memo") << zip(good_pickle_with("h\x07")) << "unknown slot 7";
  QTest::newRow("no data.pkl") << zip("", {{"x/other", "1"}}) << "no <archive>/data.pkl";
  std::vector<PthTensorSpec> past_end = {{"w", "FloatStorage", "0", 4, 2, {3}, {1}}};
  QTest::newRow("view past its storage") << zip(PickleWriter::state_dict(past_end, false),
                                                {{"archive/data/0", std::string(16, '\0')}})
                                         << "reaches past the end of its storage";
  std::vector<PthTensorSpec> short_storage = {{"w", "FloatStorage", "0", 8, 0, {8}, {1}}};
  QTest::newRow("storage shorter than declared")
      << zip(PickleWriter::state_dict(short_storage, false), {{"archive/data/0", std::string(16, '\0')}})
      << "reaches past the end of its storage";
  QTest::newRow("storage entry missing") << zip(PickleWriter::state_dict(short_storage, false))
                                         << "storage '0' of tensor 'w' is missing";
  QTest::newRow("not a zip") << QByteArray(64, 'x') << "no end-of-central-directory record";
}

void tst_ModelIo::rejects() {
  QFETCH(QByteArray, file);
  QFETCH(QString, expected);
  const std::string p = path("bad.pth");
  vidgraph::test::write_file(p, std::string(file.constData(), size_t(file.size())));
  const std::string message = error_of(p);
  QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
  QVERIFY2(message.find(p) != std::string::npos, "the error names the file");
}

void tst_ModelIo::truncated_data() {
  QTest::addColumn<bool>("zip64");
  QTest::addColumn<double>("keep");
  for (bool zip64 : {false, true}) {
    for (double keep : {0.1, 0.5, 0.9, 0.999}) {
      QTest::addRow("%s keep %.3f", zip64 ? "zip64" : "zip32", keep) << zip64 << keep;
    }
  }
}

void tst_ModelIo::truncated() {
  QFETCH(bool, zip64);
  QFETCH(double, keep);
  const std::string whole = vidgraph::test::pth_bytes(sample_tensors(), zip64);
  const std::string p = path("truncated.pth");
  vidgraph::test::write_file(p, whole.substr(0, size_t(double(whole.size()) * keep)));
  const std::string message = error_of(p);
  QVERIFY2(!message.empty(), "a truncated file must not load");
  QVERIFY2(message.find("truncated") != std::string::npos || message.find("damaged") != std::string::npos,
           message.c_str());
}

void tst_ModelIo::compressedEntryRejected() {
  std::string z = vidgraph::test::pth_bytes({{"w", at::randn({4})}}, false);
  const size_t central = z.find(std::string("PK\x01\x02", 4));
  QVERIFY(central != std::string::npos);
  z[central + 10] = 8;  // deflate
  const std::string p = path("deflate.pth");
  vidgraph::test::write_file(p, z);
  const std::string message = error_of(p);
  QVERIFY2(message.find("compressed") != std::string::npos, message.c_str());
}

void tst_ModelIo::detectsFormat() {
  using vidgraph::model_io::WeightFormat;
  const Named in = {{"a", at::randn({2, 2})}, {"b", at::arange(3, at::kLong)}};
  const std::string pth = path("fmt.pth");
  const std::string st = path("fmt.safetensors");
  const std::string junk = path("fmt.bin");
  vidgraph::test::write_pth(pth, in);
  vidgraph::model_io::save_safetensors(st, in);
  vidgraph::test::write_file(junk, "hello world, not weights");
  QCOMPARE(vidgraph::model_io::detect_weight_format(pth), WeightFormat::Pth);
  QCOMPARE(vidgraph::model_io::detect_weight_format(st), WeightFormat::Safetensors);
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, vidgraph::model_io::detect_weight_format(junk));
  for (const std::string& file : {pth, st}) {
    const auto out = vidgraph::model_io::load_state_dict_file(file, c10::Device(c10::kCPU), at::kDouble);
    QCOMPARE(out.size(), size_t(2));
    for (const auto& [name, t] : out) {
      const at::Tensor& ref = name == "a" ? in[0].second : in[1].second;
      QCOMPARE(t.scalar_type(), at::kDouble);
      QVERIFY(at::allclose(t, ref.to(at::kDouble)));
    }
  }
}

QTEST_GUILESS_MAIN(tst_ModelIo)
#include "tst_model_io.moc"
