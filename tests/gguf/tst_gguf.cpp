// GGUF reader (models/io/gguf.h, gguf_quants.h) on files written byte by byte by the test
// (tests/common/gguf_test_writer.h): every decodable block type against values worked out from the
// format's definition, metadata of every type, ComfyUI-GGUF's orig_shape and 5-D tensors, hostile
// and truncated files -> errors naming the file; and detection by magic (state_dict_file.h).
// tst_gguf_models.cpp holds the Wan DiT and umT5 GGUF files.
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "error_of.h"
#include "gguf_test_writer.h"
#include "model_io_pth_writer.h"
#include "models/io/gguf.h"
#include "models/io/safetensors.h"
#include "models/io/state_dict_file.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph::model_io;
using namespace vidgraph::test;

namespace {

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(gen() & 0xFF);
  return s;
}

void put_half(std::string& block, size_t at, float v) {
  const uint16_t h = half_bits(v);
  std::memcpy(&block[at], &h, 2);
}

uint8_t byte(const std::string& b, size_t i) { return uint8_t(b[i]); }
float half_at(const std::string& b, size_t i) { return half_to_float(uint16_t(byte(b, i) | (byte(b, i + 1) << 8))); }

// Element-by-element readings of one block, written from the format's definition (not the loops
// of the decoder): the index arithmetic says where element i's bits live.
float ref_q8_0(const std::string& b, int i) { return half_at(b, 0) * float(int8_t(byte(b, 2 + i))); }

int nibble32(const std::string& b, size_t qs, int i) {  // elements 0-15 low nibbles, 16-31 high
  return i < 16 ? (byte(b, qs + i) & 15) : (byte(b, qs + i - 16) >> 4);
}
float ref_q4_0(const std::string& b, int i) { return half_at(b, 0) * float(nibble32(b, 2, i) - 8); }
float ref_q4_1(const std::string& b, int i) { return half_at(b, 0) * float(nibble32(b, 4, i)) + half_at(b, 2); }
int q5_value(const std::string& b, size_t qh, size_t qs, int i) {
  const uint32_t high = byte(b, qh) | (byte(b, qh + 1) << 8) | (byte(b, qh + 2) << 16) | (uint32_t(byte(b, qh + 3)) << 24);
  return nibble32(b, qs, i) | int(((high >> i) & 1u) << 4);
}
float ref_q5_0(const std::string& b, int i) { return half_at(b, 0) * float(q5_value(b, 2, 6, i) - 16); }
float ref_q5_1(const std::string& b, int i) { return half_at(b, 0) * float(q5_value(b, 4, 8, i)) + half_at(b, 2); }

void k4_scale_min(const std::string& b, size_t scales, int j, int& sc, int& m) {
  auto s = [&](int k) { return int(byte(b, scales + k)); };
  if (j < 4) {
    sc = s(j) & 63;
    m = s(j + 4) & 63;
  } else {
    sc = (s(j + 4) & 15) | ((s(j - 4) >> 6) << 4);
    m = (s(j + 4) >> 4) | ((s(j) >> 6) << 4);
  }
}
float ref_q4_k(const std::string& b, int i) {
  const int sub = i / 32, l = i % 32;
  const int q = byte(b, 16 + (sub / 2) * 32 + l);
  int sc, m;
  k4_scale_min(b, 4, sub, sc, m);
  return half_at(b, 0) * float(sc) * float(sub % 2 ? q >> 4 : q & 15) - half_at(b, 2) * float(m);
}
float ref_q5_k(const std::string& b, int i) {
  const int sub = i / 32, l = i % 32;
  const int q = byte(b, 48 + (sub / 2) * 32 + l);
  const int high = (byte(b, 16 + l) >> sub) & 1;
  int sc, m;
  k4_scale_min(b, 4, sub, sc, m);
  return half_at(b, 0) * float(sc) * float((sub % 2 ? q >> 4 : q & 15) + 16 * high) - half_at(b, 2) * float(m);
}
float ref_q6_k(const std::string& b, int i) {
  const int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
  const int low_byte = byte(b, half * 64 + (quarter % 2) * 32 + l);
  const int low = quarter < 2 ? (low_byte & 15) : (low_byte >> 4);
  const int high = (byte(b, 128 + half * 32 + l) >> (2 * quarter)) & 3;
  const int scale = int8_t(byte(b, 192 + half * 8 + l / 16 + 2 * quarter));
  return half_at(b, 208) * float(scale) * float((low | (high << 4)) - 32);
}
float ref_q2_k(const std::string& b, int i) {
  const int half = i / 128, plane = (i % 128) / 32, w = i % 32;
  const int q = (byte(b, 16 + half * 32 + w) >> (2 * plane)) & 3;
  const int sc = byte(b, half * 8 + plane * 2 + w / 16);
  return half_at(b, 80) * float(sc & 15) * float(q) - half_at(b, 82) * float(sc >> 4);
}
// Q3_K scales as ggml's reference unpacks them: 32-bit words and masks over the 12 bytes.
int q3_scale(const std::string& b, int j) {
  uint32_t aux[4];
  std::memcpy(aux, b.data() + 96, 12);
  const uint32_t tmp = aux[2], k1 = 0x03030303u, k2 = 0x0f0f0f0fu;
  aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4);
  aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4);
  aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4);
  aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4);
  return int(reinterpret_cast<const int8_t*>(aux)[j]) - 32;
}
float ref_q3_k(const std::string& b, int i) {
  const int half = i / 128, plane = (i % 128) / 32, w = i % 32;
  const int q = (byte(b, 32 + half * 32 + w) >> (2 * plane)) & 3;
  const bool high = (byte(b, w) >> (half * 4 + plane)) & 1;
  return half_at(b, 108) * float(q3_scale(b, half * 8 + plane * 2 + w / 16)) * float(q - (high ? 0 : 4));
}

struct BlockCase {
  uint32_t id;
  GgmlType type;
  int block, bytes;
  std::vector<size_t> half_at;  // where the fp16 scales sit
  float (*ref)(const std::string&, int);
};

const std::vector<BlockCase>& block_cases() {
  static const std::vector<BlockCase> cases = {
      {kTQ8_0, GgmlType::Q8_0, 32, 34, {0}, ref_q8_0},       {kTQ4_0, GgmlType::Q4_0, 32, 18, {0}, ref_q4_0},
      {kTQ4_1, GgmlType::Q4_1, 32, 20, {0, 2}, ref_q4_1},    {kTQ5_0, GgmlType::Q5_0, 32, 22, {0}, ref_q5_0},
      {kTQ5_1, GgmlType::Q5_1, 32, 24, {0, 2}, ref_q5_1},    {kTQ2_K, GgmlType::Q2_K, 256, 84, {80, 82}, ref_q2_k},
      {kTQ3_K, GgmlType::Q3_K, 256, 110, {108}, ref_q3_k},   {kTQ4_K, GgmlType::Q4_K, 256, 144, {0, 2}, ref_q4_k},
      {kTQ5_K, GgmlType::Q5_K, 256, 176, {0, 2}, ref_q5_k},  {kTQ6_K, GgmlType::Q6_K, 256, 210, {208}, ref_q6_k},
  };
  return cases;
}

#define EXPECT_ERROR(call, needle)                                                        \
  do {                                                                                    \
    const std::string message_ = error_of([&] { call; });                                 \
    QVERIFY2(message_.find(needle) != std::string::npos, ("got: " + message_).c_str());  \
  } while (0)

}  // namespace

class tst_Gguf : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const std::string& name) const { return (dir_.path() + "/").toStdString() + name; }
  std::string write(const std::string& name, const GgufTestWriter& w) const {
    write_file(path(name), w.bytes());
    return path(name);
  }

 private Q_SLOTS:
  // Literal values worked out by hand from the definitions.
  void handValues() {
    // Q8_0: d = 0.5, q_i = i - 16.
    std::string q8(34, '\0');
    put_half(q8, 0, 0.5f);
    for (int i = 0; i < 32; ++i) q8[2 + i] = char(int8_t(i - 16));
    float y[256];
    ggml_dequantize(GgmlType::Q8_0, reinterpret_cast<const uint8_t*>(q8.data()), y, 32);
    QCOMPARE(y[0], -8.0f);
    QCOMPARE(y[31], 7.5f);
    // Q4_0: d = 2, byte j = j | (15 - j) << 4: element j = 2 (j - 8), element j + 16 = 2 (7 - j).
    std::string q4(18, '\0');
    put_half(q4, 0, 2.0f);
    for (int j = 0; j < 16; ++j) q4[2 + j] = char(j | ((15 - j) << 4));
    ggml_dequantize(GgmlType::Q4_0, reinterpret_cast<const uint8_t*>(q4.data()), y, 32);
    QCOMPARE(y[0], -16.0f);
    QCOMPARE(y[15], 14.0f);
    QCOMPARE(y[16], 14.0f);
    QCOMPARE(y[31], -16.0f);
    // Q4_K: d = 0.5, dmin = 0.25; sub-block 0: scale 3, min 2; first byte 0x05 -> 0.5·3·5 − 0.25·2.
    std::string q4k(144, '\0');
    put_half(q4k, 0, 0.5f);
    put_half(q4k, 2, 0.25f);
    q4k[4] = 3;
    q4k[8] = 2;
    q4k[16] = 0x05;
    ggml_dequantize(GgmlType::Q4_K, reinterpret_cast<const uint8_t*>(q4k.data()), y, 256);
    QCOMPARE(y[0], 7.0f);
    QCOMPARE(y[1], -0.5f);
    QCOMPARE(y[32], 0.0f);  // sub-block 1: scale and min 0
    // Q6_K: d = 1, scale 0 = 2, low nibble 3 and high bits 2 of element 0: 2·((3 | 2 << 4) − 32).
    std::string q6k(210, '\0');
    put_half(q6k, 208, 1.0f);
    q6k[192] = 2;
    q6k[0] = 3;
    q6k[128] = 2;
    ggml_dequantize(GgmlType::Q6_K, reinterpret_cast<const uint8_t*>(q6k.data()), y, 256);
    QCOMPARE(y[0], 6.0f);
    QCOMPARE(y[1], -64.0f);  // q = 0 -> (0 − 32)·2
    // Q3_K: all scale bits 0 (scale −32), no high bits (q − 4), d = 0.5: 0.5·(−32)·(−4) = 64.
    std::string q3k(110, '\0');
    put_half(q3k, 108, 0.5f);
    ggml_dequantize(GgmlType::Q3_K, reinterpret_cast<const uint8_t*>(q3k.data()), y, 256);
    QCOMPARE(y[0], 64.0f);
    QCOMPARE(y[255], 64.0f);
  }

  // Every quantised type: two blocks of random bits (fixed fp16 scales), read through a GGUF file,
  // against the element-wise readings of the definition.
  void everyBlockType_data() {
    QTest::addColumn<int>("index");
    for (size_t i = 0; i < block_cases().size(); ++i)
      QTest::newRow(ggml_type_info(block_cases()[i].type).name) << int(i);
  }
  void everyBlockType() {
    QFETCH(int, index);
    const BlockCase& c = block_cases()[size_t(index)];
    std::string blocks;
    for (int b = 0; b < 2; ++b) {
      std::string block = random_bytes(size_t(c.bytes), uint32_t(index * 10 + b));
      for (size_t k = 0; k < c.half_at.size(); ++k) put_half(block, c.half_at[k], 0.03125f * float(b + 1 + k));
      blocks += block;
    }
    GgufTestWriter w;
    w.tensor("t", {uint64_t(c.block), 2}, c.id, blocks);  // 2 rows of one block each
    const std::string file = write("blocks.gguf", w);
    const GgufFile g = GgufFile::open(file);
    const at::Tensor t = g.load("t");
    QCOMPARE(t.sizes().vec(), (std::vector<int64_t>{2, c.block}));
    QCOMPARE(t.scalar_type(), at::kFloat);
    for (int b = 0; b < 2; ++b) {
      const std::string block = blocks.substr(size_t(b * c.bytes), size_t(c.bytes));
      for (int i = 0; i < c.block; ++i) {
        const float want = c.ref(block, i), got = t[b][i].item<float>();
        if (std::fabs(want - got) > 1e-6f * std::max(1.0f, std::fabs(want)))
          QFAIL(qPrintable(QString("block %1 element %2: %3, expected %4").arg(b).arg(i).arg(got).arg(want)));
      }
    }
  }

  // F32 / F16 / BF16 keep their dtype (or convert to the one asked for) and their exact values.
  void plainFloats() {
    const at::Tensor x = at::randn({3, 4, 5});
    GgufTestWriter w;
    add_torch_tensor(w, "f32", x, kTF32);
    add_torch_tensor(w, "f16", x, kTF16);
    add_torch_tensor(w, "bf16", x, kTBF16);
    const GgufFile g = GgufFile::open(write("plain.gguf", w));
    QVERIFY(at::equal(g.load("f32"), x));
    QVERIFY(at::equal(g.load("f16"), x.to(at::kHalf)));
    QVERIFY(at::equal(g.load("bf16"), x.to(at::kBFloat16)));
    QCOMPARE(g.load("f16", c10::Device(c10::kCPU), at::kFloat).scalar_type(), at::kFloat);
    QCOMPARE(g.find("f32")->dims, (std::vector<int64_t>{5, 4, 3}));  // ggml order as stored
  }

  // A NaN block scale or an infinite plain weight is refused at load, naming the file and tensor.
  void nonFiniteTensorsNamed() {
    std::string q8(34, '\0');
    put_half(q8, 0, std::nanf(""));
    GgufTestWriter w;
    w.tensor("nan_scale", {32, 1}, kTQ8_0, q8);
    at::Tensor x = at::randn({4, 8});
    x[1][2] = std::numeric_limits<float>::infinity();
    add_torch_tensor(w, "inf_weight", x, kTF32);
    add_torch_tensor(w, "fine", at::randn({4, 8}), kTF16);
    const std::string file = write("non-finite.gguf", w);
    const GgufFile g = GgufFile::open(file);
    QCOMPARE(g.load("fine").size(0), int64_t(4));
    for (const char* name : {"nan_scale", "inf_weight"}) {
      try {
        g.load(name);
        QFAIL(qPrintable(QString("%1 loaded").arg(name)));
      } catch (const GgufError& e) {
        const std::string what = e.what();
        QVERIFY2(what.find(file) != std::string::npos && what.find(std::string("'") + name + "'") != std::string::npos &&
                     what.find("NaN or infinite") != std::string::npos,
                 e.what());
      }
    }
  }

  // Metadata of every value type, arrays and strings included, versions 2 and 3.
  void metadataOfEveryType_data() {
    QTest::addColumn<uint32_t>("version");
    QTest::newRow("v3") << 3u;
    QTest::newRow("v2") << 2u;
  }
  void metadataOfEveryType() {
    QFETCH(uint32_t, version);
    GgufTestWriter w;
    w.version = version;
    w.raw_kv("u8", kU8, le<uint8_t>(200));
    w.raw_kv("i8", kI8, le<int8_t>(-5));
    w.raw_kv("u16", kU16, le<uint16_t>(60000));
    w.raw_kv("i16", kI16, le<int16_t>(-30000));
    w.u32_kv("u32", 4000000000u);
    w.raw_kv("i32", kI32, le<int32_t>(-7));
    w.raw_kv("f32", kF32, le<float>(1.5f));
    w.raw_kv("bool", kBool, le<uint8_t>(1));
    w.string_kv("general.architecture", "wan");
    w.raw_kv("u64", kU64, le<uint64_t>(1ull << 40));
    w.raw_kv("i64", kI64, le<int64_t>(-(1ll << 40)));
    w.raw_kv("f64", kF64, le<double>(0.25));
    w.raw_kv("tokens", kArray, le<uint32_t>(kString) + le<uint64_t>(3) + gguf_str("<pad>") + gguf_str("") + gguf_str("▁a"));
    w.raw_kv("scores", kArray, le<uint32_t>(kF32) + le<uint64_t>(2) + le<float>(-1.0f) + le<float>(2.0f));
    w.i32_array_kv("shape", {3, 4});
    w.raw_kv("empty", kArray, le<uint32_t>(kU8) + le<uint64_t>(0));
    const GgufFile g = GgufFile::open(write("meta.gguf", w));
    QCOMPARE(g.header().version, version);
    QCOMPARE(g.metadata("u8")->as_int("u8"), 200);
    QCOMPARE(g.metadata("i8")->as_int("i8"), -5);
    QCOMPARE(g.metadata("u16")->as_int("u16"), 60000);
    QCOMPARE(g.metadata("i16")->as_int("i16"), -30000);
    QCOMPARE(g.metadata("u32")->as_int("u32"), 4000000000ll);
    QCOMPARE(g.metadata("i32")->as_int("i32"), -7);
    QCOMPARE(g.metadata("f32")->float_list(), std::vector<double>{1.5});
    QCOMPARE(g.metadata("bool")->as_int("bool"), 1);
    QCOMPARE(g.architecture(), std::string("wan"));
    QCOMPARE(g.metadata("u64")->as_int("u64"), 1ll << 40);
    QCOMPARE(g.metadata("i64")->as_int("i64"), -(1ll << 40));
    QCOMPARE(g.metadata("f64")->float_list(), std::vector<double>{0.25});
    QCOMPARE(g.metadata("tokens")->string_list(), (std::vector<std::string>{"<pad>", "", "▁a"}));
    QVERIFY(g.metadata("tokens")->is_array);
    QCOMPARE(g.metadata("scores")->float_list(), (std::vector<double>{-1.0, 2.0}));
    QCOMPARE(g.metadata("shape")->int_list(), (std::vector<int64_t>{3, 4}));
    QCOMPARE(g.metadata("empty")->size(), size_t(0));
    QVERIFY(g.tensors().empty());
    EXPECT_ERROR(g.metadata("tokens")->as_string("tokens"), "'tokens' is not a string");
  }

  // ComfyUI-GGUF's converter stores some tensors reshaped with their torch shape in metadata; its
  // 5-D fix writes patch_embedding.weight with five dimensions. Both come back in torch shape.
  void origShapeAndFiveDims() {
    const at::Tensor w2 = at::randn({6, 64});
    const at::Tensor w5 = at::randn({8, 3, 1, 2, 2});
    GgufTestWriter w;
    add_torch_tensor(w, "head.weight", w2.reshape({-1, 32}), kTQ8_0);  // stored [12, 32]
    w.i32_array_kv("comfy.gguf.orig_shape.head.weight", {6, 64});
    add_torch_tensor(w, "patch_embedding.weight", w5, kTF32);
    const GgufFile g = GgufFile::open(write("shapes.gguf", w));
    QCOMPARE(g.find("head.weight")->shape, (std::vector<int64_t>{6, 64}));
    QCOMPARE(g.load("head.weight").sizes().vec(), (std::vector<int64_t>{6, 64}));
    QVERIFY(at::allclose(g.load("head.weight"), w2, 0, 0.02));
    QCOMPARE(g.find("patch_embedding.weight")->dims, (std::vector<int64_t>{2, 2, 1, 3, 8}));
    QVERIFY(at::equal(g.load("patch_embedding.weight"), w5));

    GgufTestWriter bad;
    add_torch_tensor(bad, "x", w2, kTF32);
    bad.i32_array_kv("comfy.gguf.orig_shape.x", {5, 64});
    EXPECT_ERROR(GgufFile::open(write("bad_shape.gguf", bad)), "gives 320 elements, the tensor has 384");
  }

  // A GGUF named .safetensors is read as GGUF by the format-detecting loader; the safetensors
  // reader itself says what the file is.
  void detectedByMagic() {
    const at::Tensor x = at::randn({4, 32});
    GgufTestWriter w;
    add_torch_tensor(w, "blocks.0.ffn.0.weight", x, kTQ8_0);
    add_torch_tensor(w, "blocks.0.ffn.0.bias", x[0], kTF16);
    const std::string file = write("renamed.safetensors", w);
    QCOMPARE(detect_weight_format(file), WeightFormat::Gguf);
    const NamedTensors all = load_state_dict_file(file);
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[0].first, std::string("blocks.0.ffn.0.weight"));
    QVERIFY(at::allclose(all[0].second, x, 0, 0.05));
    QCOMPARE(all[1].second.scalar_type(), at::kHalf);
    const NamedTensors bf16 = load_state_dict_file(file, c10::Device(c10::kCPU), at::kBFloat16);
    QCOMPARE(bf16[0].second.scalar_type(), at::kBFloat16);
    EXPECT_ERROR(SafetensorsFile::open(file), "is a GGUF file (llama.cpp / ggml weights); expected a .safetensors");
  }

  // A type that opens (its size is known) but is not decoded is named on load, with what to use.
  void unreadableTypeNamed() {
    GgufTestWriter w;
    w.tensor("blocks.3.ffn.2.weight", {256, 1}, kTIQ4_XS, std::string(136, '\0'));
    const std::string file = write("iq4.gguf", w);
    const GgufFile g = GgufFile::open(file);
    EXPECT_ERROR(g.load("blocks.3.ffn.2.weight"),
                 "tensor 'blocks.3.ffn.2.weight' of '" + file + "' uses GGUF type IQ4_XS, which Vidgraph does not read");
    EXPECT_ERROR(g.load("blocks.3.ffn.2.weight"), "use a Q4_K_M, Q5_K_M, Q6_K or Q8_0 file");
  }

  // Truncated files: every cut inside the header or the data is refused naming the file.
  void truncatedFiles() {
    GgufTestWriter w;
    w.string_kv("general.architecture", "wan");
    add_torch_tensor(w, "a", at::randn({2, 32}), kTQ8_0);
    add_torch_tensor(w, "b", at::randn({3}), kTF32);
    const std::string whole = w.bytes();
    for (size_t cut : {size_t(0), size_t(3), size_t(10), size_t(30), size_t(60), size_t(90), whole.size() - 1}) {
      const std::string file = path("cut" + std::to_string(cut) + ".gguf");
      write_file(file, whole.substr(0, cut));
      const std::string message = error_of([&] { GgufFile::open(file); });
      QVERIFY2(message.find(file) != std::string::npos, message.c_str());
      QVERIFY2(message.find("truncated") != std::string::npos || message.find("magic") != std::string::npos,
               message.c_str());
    }
  }

  // Hostile headers: counts, lengths, offsets, types and layouts that do not fit are refused before
  // anything large is allocated.
  void hostileHeaders() {
    auto header = [](uint64_t tensors, uint64_t kvs) {
      return std::string("GGUF") + le<uint32_t>(3) + le<uint64_t>(tensors) + le<uint64_t>(kvs);
    };
    auto expect = [&](const std::string& name, const std::string& bytes, const std::string& needle) {
      const std::string file = path(name);
      write_file(file, bytes + std::string(64, '\0'));
      const std::string message = error_of([&] { GgufFile::open(file); });
      QVERIFY2(message.find(needle) != std::string::npos, (name + ": " + message).c_str());
      QVERIFY2(message.find(file) != std::string::npos, (name + ": " + message).c_str());
    };
    expect("version1.gguf", std::string("GGUF") + le<uint32_t>(1) + std::string(16, '\0'), "version 1 is not supported");
    expect("kvcount.gguf", header(0, 1ull << 60), "metadata count 1152921504606846976 cannot fit");
    expect("tensorcount.gguf", header(1ull << 50, 0), "tensor count 1125899906842624 cannot fit");
    expect("keylen.gguf", header(0, 1) + le<uint64_t>(1ull << 40), "over the 16 MiB limit");
    expect("arraycount.gguf", header(0, 1) + gguf_str("k") + le<uint32_t>(kArray) + le<uint32_t>(kU64) + le<uint64_t>(1ull << 40),
           "claims 1099511627776 u64 elements");
    expect("valuetype.gguf", header(0, 1) + gguf_str("k") + le<uint32_t>(77), "unknown value type 77");
    expect("nested.gguf", header(0, 1) + gguf_str("k") + le<uint32_t>(kArray) + le<uint32_t>(kArray), "array of arrays");
    expect("dupkey.gguf", header(0, 2) + gguf_str("k") + le<uint32_t>(kU8) + "\x01" + gguf_str("k") + le<uint32_t>(kU8) + "\x02",
           "metadata key 'k' appears twice");
    auto info = [](const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
      std::string s = gguf_str(name) + le<uint32_t>(uint32_t(dims.size()));
      for (uint64_t d : dims) s += le(d);
      return s + le<uint32_t>(type) + le<uint64_t>(offset);
    };
    expect("dims.gguf", header(1, 0) + info("t", std::vector<uint64_t>(9, 1), kTF32, 0), "has 9 dimensions");
    expect("type.gguf", header(1, 0) + info("t", {4}, 200, 0), "unknown GGML type id 200");
    expect("block.gguf", header(1, 0) + info("t", {33}, kTQ8_0, 0), "first dimension 33 is not a multiple of the type's block of 32");
    expect("numel.gguf", header(1, 0) + info("t", {1ull << 40, 1ull << 40}, kTF32, 0), "shape is too large");
    expect("past_end.gguf", header(1, 0) + info("t", {1024}, kTF32, 0), "runs past the end of the file's");
    expect("misaligned.gguf", header(1, 0) + info("t", {1}, kTF32, 4), "not a multiple of the alignment 32");
    expect("overlap.gguf", header(2, 0) + info("a", {8}, kTF32, 0) + info("b", {8}, kTF32, 0),
           "tensors 'a' and 'b' overlap");
    expect("dupname.gguf", header(2, 0) + info("a", {1}, kTF32, 0) + info("a", {1}, kTF32, 32), "tensor 'a' appears twice");
    expect("alignment.gguf", header(0, 1) + gguf_str("general.alignment") + le<uint32_t>(kU32) + le<uint32_t>(3),
           "general.alignment is 3, not a power of two");
  }

  // Counts real files never approach are refused before their entries are read: each key or tensor
  // info costs bookkeeping far beyond its bytes in the file (issue #41: 14M keys took 2.9 GB).
  void countsAreCapped() {
    auto header = [](uint64_t tensors, uint64_t kvs) {
      return std::string("GGUF") + le<uint32_t>(3) + le<uint64_t>(tensors) + le<uint64_t>(kvs);
    };
    auto message_of = [&](const std::string& name, const std::string& bytes) {
      write_file(path(name), bytes);
      return error_of([&] { GgufFile::open(path(name)); });
    };
    std::string keys = header(0, kGgufMaxMetadataKeys + 1);
    for (uint64_t i = 0; i <= kGgufMaxMetadataKeys; ++i) keys += gguf_str(std::to_string(i)) + le<uint32_t>(kU8) + "\x01";
    const std::string many_keys = message_of("keys.gguf", keys);
    QVERIFY2(many_keys.find("metadata count 65537 is over Vidgraph's limit of 65536") != std::string::npos, many_keys.c_str());
    QVERIFY2(many_keys.find(path("keys.gguf")) != std::string::npos, many_keys.c_str());

    std::string tensors = header(kGgufMaxTensors + 1, 0);
    for (uint64_t i = 0; i <= kGgufMaxTensors; ++i) {
      tensors += gguf_str(std::to_string(i)) + le<uint32_t>(1) + le<uint64_t>(0) + le<uint32_t>(kTF32) + le<uint64_t>(0);
    }
    const std::string many_tensors = message_of("tensors.gguf", tensors);
    QVERIFY2(many_tensors.find("tensor count 262145 is over Vidgraph's limit of 262144") != std::string::npos,
             many_tensors.c_str());

    const uint64_t n = kGgufMaxArrayElements + 1;
    const std::string array = message_of("array.gguf", header(0, 1) + gguf_str("k") + le<uint32_t>(kArray) +
                                                           le<uint32_t>(kU8) + le<uint64_t>(n) + std::string(n, '\1'));
    QVERIFY2(array.find("'k' has 16777217 elements, over the limit of 16777216") != std::string::npos, array.c_str());

    // Just under the caps is read: the caps are not off by one.
    std::string keys_ok = header(0, 2);
    for (int i = 0; i < 2; ++i) keys_ok += gguf_str(std::to_string(i)) + le<uint32_t>(kU8) + "\x01";
    write_file(path("keys_ok.gguf"), keys_ok + std::string(64, '\0'));
    QCOMPARE(GgufFile::open(path("keys_ok.gguf")).header().metadata.size(), size_t(2));
  }

  // Arrays are kept as the file stores them (typed access by index), and a listing parse skips
  // their elements after checking they lie in the file, keeping only ComfyUI-GGUF's shapes.
  void arraysCompactAndListingSkipsThem() {
    GgufTestWriter w;
    w.raw_kv("tokenizer.ggml.tokens", kArray,
             le<uint32_t>(kString) + le<uint64_t>(3) + gguf_str("<pad>") + gguf_str("") + gguf_str("▁a"));
    w.raw_kv("bytes", kArray, le<uint32_t>(kI8) + le<uint64_t>(3) + le<int8_t>(-1) + le<int8_t>(2) + le<int8_t>(-3));
    w.i32_array_kv("comfy.gguf.orig_shape.a", {2, 32});
    add_torch_tensor(w, "a", at::randn({64}), kTF32);
    const std::string file = write("listing.gguf", w);
    const GgufFile all = GgufFile::open(file);
    const GgufValue& tokens = *all.metadata("tokenizer.ggml.tokens");
    QCOMPARE(tokens.text, std::string("<pad>▁a"));  // one buffer, not one string per token
    QCOMPARE(tokens.string_at(2), std::string_view("▁a"));
    QCOMPARE(tokens.string_at(1), std::string_view(""));
    QCOMPARE(all.metadata("bytes")->bytes.size(), size_t(3));
    QCOMPARE(all.metadata("bytes")->int_list(), (std::vector<int64_t>{-1, 2, -3}));
    EXPECT_ERROR(tokens.string_at(3), "out of range");
    EXPECT_ERROR(all.metadata("bytes")->float_at(0), "is not a float");

    const GgufFile listed = GgufFile::open(file, GgufRead::Listing);
    const GgufValue& skipped = *listed.metadata("tokenizer.ggml.tokens");
    QVERIFY(!skipped.loaded);
    QCOMPARE(skipped.size(), size_t(3));
    QVERIFY(skipped.text.empty() && skipped.ends.empty());
    EXPECT_ERROR(skipped.string_at(0), "skipped");
    QCOMPARE(listed.find("a")->shape, (std::vector<int64_t>{2, 32}));  // orig_shape kept
    // A skipped array must still lie in the file.
    std::string cut = w.bytes().substr(0, 40);
    write_file(path("listing_cut.gguf"), cut);
    QVERIFY(error_of([&] { GgufFile::open(path("listing_cut.gguf"), GgufRead::Listing); }).find("truncated") !=
            std::string::npos);
  }

  // A non-default alignment places the data section and every tensor on its multiples.
  void customAlignment() {
    GgufTestWriter w;
    w.alignment = 64;
    w.u32_kv("general.alignment", 64);
    const at::Tensor a = at::randn({3}), b = at::randn({5});
    add_torch_tensor(w, "a", a, kTF32);
    add_torch_tensor(w, "b", b, kTF32);
    const GgufFile g = GgufFile::open(write("align64.gguf", w));
    QCOMPARE(g.header().alignment, uint64_t(64));
    QCOMPARE(g.header().data_offset % 64, uint64_t(0));
    QCOMPARE(g.find("b")->offset, uint64_t(64));
    QVERIFY(at::equal(g.load("a"), a));
    QVERIFY(at::equal(g.load("b"), b));
  }
};

QTEST_GUILESS_MAIN(tst_Gguf)
#include "tst_gguf.moc"
