// Tests of the restricted PyTorch `.pth` reader (models/io/pth_reader.h, zip_archive.h,
// pth_pickle.h) and of the format-detecting loader (state_dict_file.h), on files written by the
// C++ fixture tests/common/model_io_pth_writer.h in PyTorch's own layout; and ComfyUI's scaled-fp8
// safetensors convention (scaled_fp8.h), old and new scale names, with its inconsistent files.
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <set>

#include "models/io/file_kind.h"
#include "models/io/pth_reader.h"
#include "models/io/scaled_fp8.h"
#include "models/io/state_dict_file.h"
#include "model_io_pth_writer.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using vidgraph::test::PickleWriter;
using vidgraph::test::PthTensorSpec;
using Named = std::vector<std::pair<std::string, at::Tensor>>;

namespace {

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) {
    out += s;
  }
  return out;
}

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
  void hostilePickles_data();
  void hostilePickles();
  void manyTensorsStillLoad();
  void corruptEntries_data();
  void corruptEntries();
  void wrongFileKinds_data();
  void wrongFileKinds();
  void fromBytes();
  void scaledFp8Loads_data();
  void scaledFp8Loads();
  void scaledFp8Rejects_data();
  void scaledFp8Rejects();

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

// Hostile pickles must end in a clear error: no stack overflow (SIGSEGV), no unbounded memory.
void tst_ModelIo::hostilePickles_data() {
  QTest::addColumn<QByteArray>("body");
  QTest::addColumn<QString>("expected");
  auto row = [](const char* tag, const std::string& body, const char* expected) {
    QTest::newRow(tag) << QByteArray(body.data(), int(body.size())) << expected;
  };
  // 2,000,000 EMPTY_LIST then 2,000,000 APPEND: used to build a 2M-deep tree whose recursive
  // destruction overflowed the stack.
  row("2,000,000 nested lists", repeat("]", 2000000) + repeat("a", 1999999), "stack grows past 65536");
  // The same depth with a stack of one entry: each TUPLE1 wraps the previous value.
  row("2,000,000 nested tuples", "]" + repeat("\x85", 2000000), "nest deeper than 1000");
  row("60,000 nested lists", repeat("]", 60000) + repeat("a", 59999), "nest deeper than 1000");
  row("a list that holds itself", std::string("]q\x00h\x00" "a", 6), "does not hold a state dict");
  row("16M-entry stack", repeat("N", 1u << 24), "stack grows past 65536");
  row("100,000 MARKs", repeat("(", 100000), "stack grows past 65536");
  std::string memo = "N";
  for (uint32_t k = 0; k <= (1u << 20); ++k) {
    memo += 'r';
    for (int b = 0; b < 4; ++b) {
      memo += char((k >> (8 * b)) & 0xff);
    }
  }
  row("1,048,577 memo slots", memo, "memoises more than 1048576");
  row("2,400,000 values", "(" + repeat("N", 60000) + repeat("t(" + repeat("N", 60000), 40), "builds more than 2097152");
}

void tst_ModelIo::hostilePickles() {
  QFETCH(QByteArray, body);
  QFETCH(QString, expected);
  PickleWriter p;
  p.raw(std::string(body.constData(), size_t(body.size())));
  const std::string z = vidgraph::test::pth_zip({{"archive/data.pkl", p.finish()}}, false);
  const std::string file = path("hostile.pth");
  vidgraph::test::write_file(file, z);
  const std::string message = error_of(file);
  QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
  QVERIFY2(message.find(file) != std::string::npos, message.c_str());
}

// The bounds leave room for real files: 5,000 tensors (the Wan2.2 VAE and umT5 have a few hundred).
void tst_ModelIo::manyTensorsStillLoad() {
  Named in;
  for (int i = 0; i < 5000; ++i) {
    in.emplace_back("blocks." + std::to_string(i) + ".weight", at::full({2, 3}, float(i)));
  }
  const std::string file = path("many.pth");
  vidgraph::test::write_pth(file, in, true);
  const Named out = vidgraph::model_io::pth_load_state_dict(file);
  QCOMPARE(out.size(), in.size());
  QVERIFY(at::equal(out[4999].second, in[4999].second));
}

// Flipping one byte of an entry that is read must be reported by its CRC-32, naming entry and file.
void tst_ModelIo::corruptEntries_data() {
  QTest::addColumn<QString>("needle");  // bytes to damage, found in the file
  QTest::addColumn<bool>("views");      // the tensors are partial views of one storage
  QTest::addColumn<QString>("entry");
  QTest::newRow("tensor data") << "DATA" << false << "archive/data/0";
  QTest::newRow("tensor data under a partial view") << "DATA" << true << "archive/data/0";
  QTest::newRow("data.pkl") << "distinctive_name" << false << "archive/data.pkl";
}

void tst_ModelIo::corruptEntries() {
  QFETCH(QString, needle);
  QFETCH(bool, views);
  QFETCH(QString, entry);
  const std::string bytes = "....DATA....DATA";  // 16 bytes = 4 floats
  std::vector<PthTensorSpec> specs = {{"distinctive_name", "FloatStorage", "0", 4, 0, {4}, {1}}};
  if (views) {
    specs = {{"distinctive_name", "FloatStorage", "0", 4, 1, {2}, {1}}};
  }
  std::string z = vidgraph::test::pth_zip(
      {{"archive/data.pkl", PickleWriter::state_dict(specs, true)}, {"archive/data/0", bytes}}, false);
  const std::string file = path("intact.pth");
  vidgraph::test::write_file(file, z);
  QVERIFY2(error_of(file).empty(), error_of(file).c_str());
  const size_t at_byte = z.find(needle.toStdString());
  QVERIFY(at_byte != std::string::npos);
  z[at_byte] ^= 0x20;
  const std::string bad = path("corrupt.pth");
  vidgraph::test::write_file(bad, z);
  const std::string message = error_of(bad);
  QVERIFY2(message.find("CRC-32") != std::string::npos, message.c_str());
  QVERIFY2(message.find("'" + entry.toStdString() + "'") != std::string::npos, message.c_str());
  QVERIFY2(message.find(bad) != std::string::npos, message.c_str());
}

// A file of another kind, whatever its name, gets a sentence saying what it is and what is expected.
void tst_ModelIo::wrongFileKinds_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("expected");
  auto row = [](const char* tag, const std::string& bytes, const char* expected) {
    QTest::newRow(tag) << QByteArray(bytes.data(), int(bytes.size())) << expected;
  };
  // A GGUF is read as one (tests/gguf): a damaged one says so as a GGUF.
  row("damaged GGUF", std::string("GGUF\x03\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00", 16) + std::string(64, '\0'),
      "invalid GGUF file");
  row("HTML page", "<!DOCTYPE html>\n<html><head><title>404</title></head></html>", "an HTML page");
  row("Git LFS pointer", "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 10\n", "a text file");
  row("legacy pickle", std::string("\x80\x02}q\x00.", 6), "legacy (non-zip) PyTorch pickle");
  row("empty", "", "an empty file");
  row("config.json", "{\"dim\": 3072}", "a JSON text file");
  row("zip without data.pkl", vidgraph::test::pth_zip({{"model/weights.bin", "1234"}}, false),
      "is a zip file but not a PyTorch checkpoint");
  row("truncated zip", std::string("PK\x03\x04", 4) + std::string(40, '\0'),
      "no end-of-central-directory record");
  // The state dict itself names a tensor twice (Python dicts cannot, torch.save never does).
  std::vector<PthTensorSpec> twice = {{"w", "FloatStorage", "0", 1, 0, {1}, {1}},
                                      {"w", "FloatStorage", "0", 1, 0, {1}, {1}}};
  row("pth with a duplicate name",
      vidgraph::test::pth_zip({{"archive/data.pkl", PickleWriter::state_dict(twice, false)},
                               {"archive/data/0", std::string(4, '\0')}},
                              false),
      "names the tensor 'w' twice");
  // numel * 4 bytes wraps to 0 in 64 bits: must not pass the storage bound.
  std::vector<PthTensorSpec> huge = {
      {"w", "FloatStorage", "0", int64_t(1) << 62, 0, {int64_t(1) << 62}, {1}}};
  row("pth with a wrapping storage size",
      vidgraph::test::pth_zip({{"archive/data.pkl", PickleWriter::state_dict(huge, false)},
                               {"archive/data/0", std::string(4, '\0')}},
                              false),
      "reaches past the end of its storage");
}

void tst_ModelIo::wrongFileKinds() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, expected);
  const std::string file = path("model.safetensors");
  vidgraph::test::write_file(file, std::string(bytes.constData(), size_t(bytes.size())));
  std::string message;
  try {
    vidgraph::model_io::load_state_dict_file(file);
  } catch (const std::exception& e) {
    message = e.what();
  }
  QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
  QVERIFY2(message.find(file) != std::string::npos, message.c_str());
}

void tst_ModelIo::fromBytes() {
  const Named in = sample_tensors();
  const auto reader = vidgraph::model_io::PthReader::from_bytes(vidgraph::test::pth_bytes(in, true), "memory.pth");
  QCOMPARE(reader.tensors().size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    QVERIFY2(at::equal(reader.load(reader.tensors()[i]), in[i].second), in[i].first.c_str());
  }
  try {
    vidgraph::model_io::PthReader::from_bytes("not a zip at all, but long enough to look for one", "memory.pth");
    QFAIL("from_bytes accepted garbage");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("'memory.pth'") != std::string::npos, e.what());
  }
  QCOMPARE(vidgraph::model_io::sniff_file_kind("GGUF\x03"), vidgraph::model_io::FileKind::Gguf);
  // A safetensors header of 640 bytes starts 0x80 0x02 like a pickle's PROTO 2: still safetensors.
  const std::string header_640("\x80\x02\0\0\0\0\0\0{\"a\"", 12);
  QCOMPARE(vidgraph::model_io::sniff_file_kind(header_640), vidgraph::model_io::FileKind::Safetensors);
  QCOMPARE(vidgraph::model_io::sniff_file_kind(std::string("\x80\x02}q\0", 5)),
           vidgraph::model_io::FileKind::LegacyPickle);
}

Q_DECLARE_METATYPE(vidgraph::model_io::Fp8Format)
Q_DECLARE_METATYPE(vidgraph::model_io::Fp8ScaleNaming)

namespace {

// Largest |loaded - original| an fp8 round trip of `w` with scale `s` may give: half an ulp of the
// format relative to |w| (E4M3: 2^-4, E5M2: 2^-3) or half the subnormal step times s.
at::Tensor fp8_bound(const at::Tensor& w, double s, vidgraph::model_io::Fp8Format f) {
  const bool e4m3 = f == vidgraph::model_io::Fp8Format::E4M3FN;
  return w.abs() * (e4m3 ? 0.0625 : 0.125) + s * (e4m3 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -17));
}

}  // namespace

void tst_ModelIo::scaledFp8Loads_data() {
  using vidgraph::model_io::Fp8Format;
  using vidgraph::model_io::Fp8ScaleNaming;
  QTest::addColumn<Fp8Format>("format");
  QTest::addColumn<Fp8ScaleNaming>("naming");
  QTest::newRow("E4M3 scale_weight + scaled_fp8") << Fp8Format::E4M3FN << Fp8ScaleNaming::ScaleWeight;
  QTest::newRow("E4M3 weight_scale + comfy_quant") << Fp8Format::E4M3FN << Fp8ScaleNaming::WeightScale;
  QTest::newRow("E5M2 scale_weight + scaled_fp8") << Fp8Format::E5M2 << Fp8ScaleNaming::ScaleWeight;
}

// The loaded weight is within fp8 rounding of the fp32 original, scales and markers are gone, other
// tensors are untouched; the raw codes (a loader that forgets the scale) are far outside the bound.
void tst_ModelIo::scaledFp8Loads() {
  using namespace vidgraph::model_io;
  QFETCH(Fp8Format, format);
  QFETCH(Fp8ScaleNaming, naming);
  const at::Tensor w = at::randn({8, 16}) * 0.02;  // real linear weights are ~1e-2: scale ~1e-4
  const at::Tensor norm = (at::randn({16}) + 1).to(at::kHalf);
  const at::Tensor bias = at::randn({8});
  const std::string file = path("scaled.safetensors");
  save_scaled_fp8_safetensors(file, {{"blk.0.q.weight", w}, {"blk.0.norm.weight", norm}, {"blk.0.q.bias", bias}},
                              {"blk.0.q.weight"}, format, naming);
  const Named loaded = load_state_dict_file(file);
  std::set<std::string> names;
  for (const auto& [k, t] : loaded) names.insert(k);
  QCOMPARE(names, (std::set<std::string>{"blk.0.q.weight", "blk.0.norm.weight", "blk.0.q.bias"}));
  const at::Tensor got = *find_tensor(loaded, "blk.0.q.weight");
  QCOMPARE(got.scalar_type(), at::kFloat);
  const SafetensorsFile st = SafetensorsFile::open(file);
  const std::string scale_name = naming == Fp8ScaleNaming::ScaleWeight ? "blk.0.q.scale_weight" : "blk.0.q.weight_scale";
  const double scale = st.load(scale_name).item<double>();
  QVERIFY(scale < 1e-3);
  QVERIFY(((got - w).abs() <= fp8_bound(w, scale, format)).all().item<bool>());
  QVERIFY(at::equal(*find_tensor(loaded, "blk.0.norm.weight"), norm));
  QVERIFY(at::equal(*find_tensor(loaded, "blk.0.q.bias"), bias));
  const at::Tensor unscaled = st.load("blk.0.q.weight");  // the fp8 values alone
  QVERIFY(!((unscaled - w).abs() <= fp8_bound(w, scale, format)).all().item<bool>());
  // To the compute dtype in one rounding of the fp32 product.
  const Named bf16 = load_state_dict_file(file, c10::Device(c10::kCPU), at::kBFloat16);
  QVERIFY(at::equal(*find_tensor(bf16, "blk.0.q.weight"), got.to(at::kBFloat16)));
}

void tst_ModelIo::scaledFp8Rejects_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QString>("expected");
  QTest::newRow("fp8 weight without its scale") << "no scale" << "fp8 tensor 'b.weight' (F8_E4M3) has no scale 'b.scale_weight'";
  QTest::newRow("scale of the wrong shape") << "scale shape" << "scale tensor 'a.scale_weight' has shape [2], expected a single value";
  QTest::newRow("scale without its weight") << "orphan scale" << "scale tensor 'c.scale_weight' has no weight 'c.weight'";
  QTest::newRow("scale of an integer dtype") << "int scale" << "scale tensor 'a.scale_weight' is I32, expected F32";
  QTest::newRow("two scales") << "two scales" << "tensor 'a.weight' has two scales";
  QTest::newRow("other quant format") << "nvfp4" << "uses the quantisation format 'nvfp4'";
  QTest::newRow("metadata quant format") << "meta" << "layer 'a' in metadata '_quantization_metadata' uses the quantisation format 'int8_blockwise'";
}

void tst_ModelIo::scaledFp8Rejects() {
  using namespace vidgraph::model_io;
  QFETCH(QString, kind);
  QFETCH(QString, expected);
  const at::Tensor codes = fp8_encode(at::randn({2, 3}), Fp8Format::E4M3FN);
  const at::Tensor scale = at::full({}, 0.5f);
  NamedTensors t{{"a.weight", codes}, {"a.scale_weight", scale}, {"scaled_fp8", at::empty({0}, at::kByte)}};
  std::map<std::string, std::string> dtypes{{"a.weight", "F8_E4M3"}, {"scaled_fp8", "F8_E4M3"}};
  std::map<std::string, std::string> metadata;
  auto json_bytes = [](const std::string& j) {
    at::Tensor b = at::empty({int64_t(j.size())}, at::kByte);
    std::copy(j.begin(), j.end(), static_cast<char*>(b.data_ptr()));
    return b;
  };
  if (kind == "no scale") {
    t.emplace_back("b.weight", codes);
    dtypes["b.weight"] = "F8_E4M3";
  } else if (kind == "scale shape") {
    t[1].second = at::full({2}, 0.5f);
  } else if (kind == "orphan scale") {
    t.emplace_back("c.scale_weight", scale);
  } else if (kind == "int scale") {
    t[1].second = at::full({}, 1, at::kInt);
  } else if (kind == "two scales") {
    t.emplace_back("a.weight_scale", scale);
  } else if (kind == "nvfp4") {
    t.emplace_back("a.comfy_quant", json_bytes(R"({"format": "nvfp4"})"));
  } else if (kind == "meta") {
    metadata["_quantization_metadata"] = R"({"format_version": "1.0", "layers": {"a": {"format": "int8_blockwise"}}})";
  }
  const std::string file = path("bad_scaled.safetensors");
  save_safetensors(file, t, metadata, dtypes);
  std::string msg;
  try {
    load_state_dict_file(file);
  } catch (const SafetensorsError& e) {
    msg = e.what();
  }
  QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
  QVERIFY2(msg.find(file) != std::string::npos, msg.c_str());
}

QTEST_GUILESS_MAIN(tst_ModelIo)
#include "tst_model_io.moc"
