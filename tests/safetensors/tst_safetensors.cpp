// The safetensors reader and writer: round trips of every supported dtype, conversion on load,
// unaligned data, metadata, atomic writes, and malformed files rejected with the file named; fp8
// (F8_E4M3, F8_E5M2) codes decoded against the formats' definitions.
#include "models/io/safetensors.h"

#include "models/io/fp8.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <string>

using vidgraph::model_io::SafetensorsError;
using vidgraph::model_io::SafetensorsFile;
using vidgraph::model_io::save_safetensors;
using vidgraph::model_io::Fp8Format;

namespace {

// The formats' definitions, written out here apart from fp8.cpp's tables:
// E4M3FN: bias 7, no infinities, S.1111.111 = NaN; E5M2: bias 15, exponent 31 = inf (m = 0) / NaN.
double e4m3fn_by_definition(int code) {
  const int s = code >> 7, e = (code >> 3) & 0xf, m = code & 0x7;
  const double sign = s ? -1.0 : 1.0;
  if (e == 15 && m == 7) return std::nan("");
  if (e == 0) return sign * (m / 8.0) * std::pow(2.0, -6);
  return sign * (1.0 + m / 8.0) * std::pow(2.0, e - 7);
}
double e5m2_by_definition(int code) {
  const int s = code >> 7, e = (code >> 2) & 0x1f, m = code & 0x3;
  const double sign = s ? -1.0 : 1.0;
  if (e == 31) return m == 0 ? sign * HUGE_VAL : std::nan("");
  if (e == 0) return sign * (m / 4.0) * std::pow(2.0, -14);
  return sign * (1.0 + m / 4.0) * std::pow(2.0, e - 15);
}
double fp8_by_definition(int code, Fp8Format f) {
  return f == Fp8Format::E4M3FN ? e4m3fn_by_definition(code) : e5m2_by_definition(code);
}
// Same value, NaN = NaN, and the sign of zero kept.
bool same_value(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

// Writes a file from a header text and data bytes; `declared` overrides the header size field.
void write_raw(const QString& path, const std::string& header, const std::string& data, int64_t declared = -1) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  uint64_t n = declared >= 0 ? static_cast<uint64_t>(declared) : header.size();
  char size_le[8];
  for (int i = 0; i < 8; ++i, n >>= 8) size_le[i] = static_cast<char>(n & 0xff);
  f.write(size_le, 8);
  f.write(header.data(), static_cast<qint64>(header.size()));
  f.write(data.data(), static_cast<qint64>(data.size()));
}

std::string open_error(const QString& path) {
  try {
    SafetensorsFile::open(path.toStdString());
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class tst_safetensors : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString path(const char* name) const { return dir_.filePath(QLatin1String(name)); }

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void round_trip_every_dtype_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<QString>("name");
    QTest::newRow("F64") << int(at::kDouble) << "F64";
    QTest::newRow("F32") << int(at::kFloat) << "F32";
    QTest::newRow("F16") << int(at::kHalf) << "F16";
    QTest::newRow("BF16") << int(at::kBFloat16) << "BF16";
    QTest::newRow("I64") << int(at::kLong) << "I64";
    QTest::newRow("I32") << int(at::kInt) << "I32";
    QTest::newRow("I16") << int(at::kShort) << "I16";
    QTest::newRow("I8") << int(at::kChar) << "I8";
    QTest::newRow("U8") << int(at::kByte) << "U8";
    QTest::newRow("BOOL") << int(at::kBool) << "BOOL";
  }
  void round_trip_every_dtype() {
    QFETCH(int, type); QFETCH(QString, name);
    const auto st = static_cast<at::ScalarType>(type);
    const at::Tensor t = (at::arange(24, at::kDouble).reshape({2, 3, 4}) * 3 - 20).remainder(7).to(st);
    const at::Tensor strided = t.transpose(0, 2);  // non-contiguous input is written contiguous
    const std::string file = path("dtypes.safetensors").toStdString();
    save_safetensors(file, {{"a", t}, {"b", strided}, {"empty", at::zeros({0, 3}, st)}}, {{"k", "v"}});
    const auto f = SafetensorsFile::open(file);
    QCOMPARE(f.entry("a").dtype, name.toStdString());
    QCOMPARE(f.entry("b").shape, (std::vector<int64_t>{4, 3, 2}));
    QVERIFY(at::equal(f.load("a"), t));
    QVERIFY(at::equal(f.load("b"), strided.contiguous()));
    QCOMPARE(f.load("empty").numel(), int64_t(0));
    QCOMPARE(f.metadata().at("k"), std::string("v"));
    QCOMPARE(f.names(), (std::vector<std::string>{"a", "b", "empty"}));
  }

  void load_converts_dtype() {
    const at::Tensor t = at::randn({5, 7}, at::kFloat);
    const std::string file = path("convert.safetensors").toStdString();
    save_safetensors(file, {{"x", t}, {"scalar", at::ones({}, at::kDouble)}});
    const auto f = SafetensorsFile::open(file);
    const at::Tensor d = f.load("x", at::kCPU, at::kDouble);
    QCOMPARE(d.scalar_type(), at::kDouble);
    QVERIFY(at::equal(d, t.to(at::kDouble)));
    QCOMPARE(f.load("scalar").dim(), int64_t(0));
    // The header is padded so the data region starts 8-byte aligned.
    QFile raw(QString::fromStdString(file));
    QVERIFY(raw.open(QIODevice::ReadOnly));
    const QByteArray head = raw.read(8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(head[i]);
    QCOMPARE(n % 8, uint64_t(0));
  }

  void unaligned_data_loads() {
    const float value = 1.5f;
    std::string data(1, '\x07');
    data.append(reinterpret_cast<const char*>(&value), sizeof value);
    write_raw(path("unaligned.safetensors"),
              R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})",
              data);
    const auto f = SafetensorsFile::open(path("unaligned.safetensors").toStdString());
    QCOMPARE(f.load("f").item<float>(), 1.5f);
    QCOMPARE(f.load("b").item<uint8_t>(), uint8_t(7));
  }

  void malformed_files_are_rejected_data() {
    QTest::addColumn<QByteArray>("header");
    QTest::addColumn<int>("data_bytes");
    QTest::addColumn<qint64>("declared");
    QTest::addColumn<QString>("expected");
    QTest::newRow("header too large") << QByteArray("{}") << 0 << qint64(200) * 1024 * 1024 << "exceeds the 16 MiB limit";
    QTest::newRow("header of 20 MiB") << QByteArray("{}") << 0 << qint64(20) * 1024 * 1024 << "exceeds the 16 MiB limit";
    QTest::newRow("header past end") << QByteArray("{}") << 0 << qint64(1000) << "runs past the end";
    QTest::newRow("bad JSON") << QByteArray("{\"a\":") << 0 << qint64(-1) << "not valid JSON";
    QTest::newRow("not an object") << QByteArray("[1,2]") << 0 << qint64(-1) << "not a JSON object";
    QTest::newRow("unsupported dtype")
        << QByteArray(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})") << 8 << qint64(-1) << "unsupported dtype 'C64'";
    QTest::newRow("offsets out of range")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})") << 8 << qint64(-1) << "out of range";
    QTest::newRow("span mismatch")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})") << 16 << qint64(-1) << "need 12";
    QTest::newRow("F8 span mismatch")
        << QByteArray(R"({"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,12]}})") << 12 << qint64(-1)
        << "tensor 'w': data_offsets span 12 bytes but dtype and shape need 6";
    QTest::newRow("overlap")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})")
        << 12 << qint64(-1) << "overlap";
    QTest::newRow("negative shape")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})") << 0 << qint64(-1) << "non-negative";
    QTest::newRow("no offsets")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[1]}})") << 4 << qint64(-1) << "data_offsets";
    // An empty tensor between two overlapping ones used to hide the overlap.
    QTest::newRow("overlap around an empty tensor")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})")
        << 12 << qint64(-1) << "tensors 'a' (bytes 0-8) and 'b' (bytes 4-12) overlap";
    QTest::newRow("empty tensor out of range")
        << QByteArray(R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[100,100]}})") << 8 << qint64(-1) << "out of range";
    QTest::newRow("duplicate tensor name")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})")
        << 8 << qint64(-1) << "the key 'a' appears twice in the header";
    QTest::newRow("duplicate field")
        << QByteArray(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})") << 4 << qint64(-1)
        << "the key 'dtype' appears twice";
    // 2^61 x 2 F64 elements: numel fits, numel x 8 bytes wraps to 0 and matched the empty span.
    QTest::newRow("byte size overflows")
        << QByteArray(R"({"a":{"dtype":"F64","shape":[2305843009213693952,2],"data_offsets":[0,0]}})") << 0 << qint64(-1)
        << "overflows 64 bits";
    QTest::newRow("nested too deep")
        << (QByteArray("{\"a\":") + QByteArray(100, '[') + QByteArray(100, ']') + "}") << 0 << qint64(-1)
        << "nests deeper than 8 levels";
    QTest::newRow("metadata value")
        << QByteArray(R"({"__metadata__":{"x":1}})") << 0 << qint64(-1) << "__metadata__ value 'x'";
  }
  void malformed_files_are_rejected() {
    QFETCH(QByteArray, header); QFETCH(int, data_bytes); QFETCH(qint64, declared); QFETCH(QString, expected);
    const QString file = path("bad.safetensors");
    write_raw(file, header.toStdString(), std::string(static_cast<size_t>(data_bytes), '\0'), declared);
    const std::string msg = open_error(file);
    QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
    QVERIFY2(msg.find(file.toStdString()) != std::string::npos, msg.c_str());
  }

  // Every one of the 256 codes of each format, through the table and through the reader (fp32 and a
  // converted dtype), against the definition computed above.
  void fp8_every_code_data() {
    QTest::addColumn<int>("format");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("max_finite");
    QTest::newRow("E4M3FN") << int(Fp8Format::E4M3FN) << "F8_E4M3" << 448.0;
    QTest::newRow("E5M2") << int(Fp8Format::E5M2) << "F8_E5M2" << 57344.0;
  }
  void fp8_every_code() {
    QFETCH(int, format); QFETCH(QString, dtype); QFETCH(double, max_finite);
    const auto f = static_cast<Fp8Format>(format);
    at::Tensor codes = at::arange(256, at::TensorOptions().dtype(at::kInt)).to(at::kByte).view({16, 16});
    const std::string file = path("codes.safetensors").toStdString();
    save_safetensors(file, {{"codes", codes}}, {}, {{"codes", dtype.toStdString()}});
    const SafetensorsFile st = SafetensorsFile::open(file);
    QCOMPARE(QString::fromStdString(st.entry("codes").dtype), dtype);
    const at::Tensor as_f32 = st.load("codes");
    const at::Tensor as_f64 = st.load("codes", c10::Device(c10::kCPU), at::kDouble);
    QCOMPARE(as_f32.scalar_type(), at::kFloat);
    QCOMPARE(as_f32.sizes().vec(), (std::vector<int64_t>{16, 16}));
    double largest = 0;
    int nans = 0, infs = 0;
    for (int code = 0; code < 256; ++code) {
      const double want = fp8_by_definition(code, f);
      const QByteArray row = QByteArray::number(code, 16);
      QVERIFY2(same_value(vidgraph::model_io::fp8_to_float(uint8_t(code), f), want), row);
      QVERIFY2(same_value(as_f32.view({256})[code].item<float>(), want), row);
      QVERIFY2(same_value(as_f64.view({256})[code].item<double>(), want), row);
      nans += std::isnan(want);
      infs += std::isinf(want);
      if (std::isfinite(want)) largest = std::max(largest, std::fabs(want));
    }
    QCOMPARE(largest, max_finite);
    QCOMPARE(nans, f == Fp8Format::E4M3FN ? 2 : 6);
    QCOMPARE(infs, f == Fp8Format::E4M3FN ? 0 : 2);
    // Kept as codes (keep_fp8) and looked up with a scale: the fp32 product rounded once to the dtype,
    // as a dequantisation at load gives.
    const at::Tensor kept = st.load_fp8_codes("codes");
    QCOMPARE(kept.scalar_type(), at::kByte);
    QVERIFY(at::equal(kept, codes));
    const c10::Device cpu(c10::kCPU);
    for (const at::ScalarType type : {at::kFloat, at::kBFloat16}) {
      const at::Tensor got = vidgraph::model_io::fp8_lookup(
          kept, vidgraph::model_io::fp8_value_table(f, 0.3f, type, cpu)).to(at::kDouble).view({256});
      const at::Tensor want = (as_f32 * 0.3f).to(type).to(at::kDouble).view({256});
      for (int code = 0; code < 256; ++code) {
        QVERIFY2(same_value(got[code].item<double>(), want[code].item<double>()), QByteArray::number(code, 16));
      }
    }
    QVERIFY_THROWS_EXCEPTION(vidgraph::model_io::SafetensorsError, st.load_fp8_codes("missing"));
  }

  // The encoder (used by writers and tests) inverts the table, rounds to nearest-even, saturates.
  void fp8_encode_rounds() {
    using vidgraph::model_io::fp8_from_float;
    for (const Fp8Format f : {Fp8Format::E4M3FN, Fp8Format::E5M2}) {
      for (int code = 0; code < 256; ++code) {
        const double v = fp8_by_definition(code, f);
        if (std::isnan(v)) continue;
        QCOMPARE(int(fp8_from_float(float(v), f)), code);
      }
    }
    // 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39): ties go to the even code.
    QCOMPARE(int(fp8_from_float(1.0625f, Fp8Format::E4M3FN)), 0x38);
    QCOMPARE(int(fp8_from_float(1.07f, Fp8Format::E4M3FN)), 0x39);
    QCOMPARE(int(fp8_from_float(1000.0f, Fp8Format::E4M3FN)), 0x7e);   // 448
    QCOMPARE(int(fp8_from_float(-1e6f, Fp8Format::E5M2)), 0xfb);       // -57344
    QVERIFY(std::isnan(vidgraph::model_io::fp8_to_float(fp8_from_float(NAN, Fp8Format::E4M3FN), Fp8Format::E4M3FN)));
  }

  // Only U8 codes can be written as F8, and a dtype for a tensor that is not written is an error.
  void fp8_writer_checks() {
    const std::string file = path("f8bad.safetensors").toStdString();
    for (const auto& [tensors, dtypes, expected] :
         {std::tuple{vidgraph::model_io::NamedTensors{{"w", at::ones({2})}}, std::map<std::string, std::string>{{"w", "F8_E4M3"}},
                     std::string("only U8 tensors of fp8 codes")},
          std::tuple{vidgraph::model_io::NamedTensors{{"w", at::zeros({2}, at::kByte)}},
                     std::map<std::string, std::string>{{"v", "F8_E4M3"}}, std::string("tensor 'v', which is not written")}}) {
      try {
        save_safetensors(file, tensors, {}, dtypes);
        QFAIL("the write must throw");
      } catch (const SafetensorsError& e) {
        QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
        QVERIFY2(std::string(e.what()).find(file) != std::string::npos, e.what());
      }
    }
  }

  // A 4 MB header of 2,000,000 nested arrays is refused as it is parsed, in little memory.
  void deep_header_is_refused_early() {
    const std::string header = "{\"a\":" + std::string(2000000, '[') + std::string(2000000, ']') + "}";
    const QString file = path("deep.safetensors");
    write_raw(file, header, "");
    const std::string msg = open_error(file);
    QVERIFY2(msg.find("nests deeper than 8 levels") != std::string::npos, msg.c_str());
  }

  // Files of another kind get a sentence saying what they are, not a misread header size.
  void other_file_kinds_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    QTest::newRow("GGUF") << QByteArray("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 16)
                          << "is a GGUF file (llama.cpp / ggml weights); expected a .safetensors file";
    QTest::newRow("HTML page") << QByteArray("<!doctype html><html><body>Sign in</body></html>") << "is an HTML page";
    QTest::newRow("zip") << QByteArray("PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00", 12) << "is a zip archive";
    QTest::newRow("binary junk") << QByteArray("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a", 10)
                                 << "the header is not a JSON object (byte 8 is 0x09";
  }
  void other_file_kinds() {
    QFETCH(QByteArray, bytes); QFETCH(QString, expected);
    const QString file = path("other.safetensors");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    f.close();
    const std::string msg = open_error(file);
    QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
    QVERIFY2(msg.find(file.toStdString()) != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("exceeds") == std::string::npos, msg.c_str());
  }

  void json_errors_are_sentences() {
    const QString file = path("badjson.safetensors");
    write_raw(file, "{\"a\": {\"dtype\": }", "");
    const std::string msg = open_error(file);
    QVERIFY2(msg.find("not valid JSON: at byte ") != std::string::npos, msg.c_str());
    QVERIFY2(msg.find("[json.exception") == std::string::npos, msg.c_str());
  }

  // The from-memory parsers agree with the file reader and name their origin.
  void parses_from_memory() {
    const std::string file = path("mem.safetensors").toStdString();
    save_safetensors(file, {{"x", at::ones({2, 3})}, {"e", at::zeros({0})}, {"y", at::arange(5, at::kLong)}},
                     {{"k", "v"}});
    QFile f(QString::fromStdString(file));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray all = f.readAll();
    const auto header = vidgraph::model_io::parse_safetensors_bytes(std::string(all.constData(), size_t(all.size())),
                                                                     "in-memory");
    const auto opened = SafetensorsFile::open(file);
    QCOMPARE(header.entries.size(), opened.names().size());
    for (const auto& e : header.entries) {
      QCOMPARE(e.shape, opened.entry(e.name).shape);
      QCOMPARE(e.begin, opened.entry(e.name).begin);
    }
    QCOMPARE(header.metadata.at("k"), std::string("v"));
    try {
      vidgraph::model_io::parse_safetensors_header(std::string("{\"a\":1}"), 0, "in-memory");
      QFAIL("a bad header was accepted");
    } catch (const SafetensorsError& e) {
      QVERIFY2(std::string(e.what()).find("'in-memory'") != std::string::npos, e.what());
    }
  }

  void short_and_missing_files() {
    QFile f(path("short.safetensors"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("abc", 3);
    f.close();
    QVERIFY(open_error(path("short.safetensors")).find("shorter than the 8-byte header") != std::string::npos);
    QVERIFY(open_error(path("nope.safetensors")).find("cannot open") != std::string::npos);
  }

  void missing_tensor_names_file_and_tensor() {
    const std::string file = path("one.safetensors").toStdString();
    save_safetensors(file, {{"x", at::zeros({2})}});
    const auto f = SafetensorsFile::open(file);
    QVERIFY(!f.contains("y"));
    try {
      f.load("y");
      QFAIL("loading an absent tensor must throw");
    } catch (const SafetensorsError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.find(file) != std::string::npos && msg.find("'y'") != std::string::npos, e.what());
    }
  }

  void writes_are_atomic() {
    const std::string file = path("atomic.safetensors").toStdString();
    save_safetensors(file, {{"x", at::ones({3})}});
    // A failing write (unsupported dtype, duplicate name) leaves the old file and no temporary.
    bool threw = false;
    try {
      save_safetensors(file, {{"x", at::zeros({3})}, {"x", at::zeros({3})}});
    } catch (const SafetensorsError& e) {
      threw = std::string(e.what()).find("appears twice") != std::string::npos;
    }
    QVERIFY(threw);
    QVERIFY(at::equal(SafetensorsFile::open(file).load("x"), at::ones({3})));
    const QStringList leftovers = QDir(dir_.path()).entryList({QStringLiteral("*.tmp-*")}, QDir::Files);
    QVERIFY2(leftovers.isEmpty(), qPrintable(leftovers.join(QLatin1Char(' '))));
    // A successful write replaces the file, also while a reader still maps the old one.
    const auto old_reader = SafetensorsFile::open(file);
    save_safetensors(file, {{"y", at::full({2}, 4.0)}});
    QVERIFY(at::equal(SafetensorsFile::open(file).load("y"), at::full({2}, 4.0)));
    QVERIFY(at::equal(old_reader.load("x"), at::ones({3})));
    // No write into a folder that does not exist; the message names the file.
    try {
      save_safetensors(path("no/such/dir.safetensors").toStdString(), {{"x", at::ones({1})}});
      QFAIL("writing into a missing folder must throw");
    } catch (const SafetensorsError& e) {
      QVERIFY(std::string(e.what()).find("dir.safetensors") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(tst_safetensors)
#include "tst_safetensors.moc"
