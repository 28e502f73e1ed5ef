// Models from GGUF files laid out as the published ones: a tiny Wan DiT as QuantStack's
// Wan2.2-TI2V-5B-GGUF (ComfyUI-GGUF's converter: official names, general.architecture = wan,
// Q8_0 matrices, F16, F32 vectors / small tensors / modulation, the 5-D patch embedding restored,
// a tensor stored reshaped with comfy.gguf.orig_shape) gives the fp32 model's output within the
// Q8_0 tolerance; a tiny umT5 encoder as city96's umt5-xxl-encoder GGUF (llama.cpp names) maps and
// loads, with the tokenizer its llama.cpp metadata carries rebuilt (the ids of the spiece.model it
// came from); GGUFs of other models are refused by name.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "error_of.h"
#include "gguf_test_writer.h"
#include "model_io_pth_writer.h"
#include "models/io/safetensors.h"
#include "models/t5/sentencepiece_library.h"
#include "models/t5/umt5_checkpoint.h"
#include "models/t5/umt5_tokenizer.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::test;

namespace {

// What llama.cpp's converter reads from a SentencePiece model, read here from the protobuf wire
// format of the .model file (ModelProto: 1 pieces {1 piece, 2 score, 3 type}, 3 normalizer_spec
// {2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces}).
struct SpmFields {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::string charsmap;
  bool add_dummy_prefix = true, remove_extra_whitespaces = true;
};

uint64_t varint(const std::string& s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    const uint8_t b = uint8_t(s[i++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

// Calls on(field, wire type, value bytes or varint) for each field of a message.
void fields(const std::string& m, const std::function<void(int, int, const std::string&, uint64_t)>& on) {
  for (size_t i = 0; i < m.size();) {
    const uint64_t key = varint(m, i);
    const int wire = int(key & 7);
    uint64_t v = 0;
    std::string bytes;
    if (wire == 0) v = varint(m, i);
    if (wire == 2) {
      const uint64_t n = varint(m, i);
      bytes = m.substr(i, n);
      i += n;
    }
    if (wire == 5) bytes = m.substr(i, 4), i += 4;
    if (wire == 1) bytes = m.substr(i, 8), i += 8;
    on(int(key >> 3), wire, bytes, v);
  }
}

SpmFields read_spm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  SpmFields out;
  fields(buffer.str(), [&](int f, int, const std::string& bytes, uint64_t) {
    if (f == 1) {
      out.pieces.emplace_back();
      out.scores.push_back(0.0f);
      out.types.push_back(1);  // NORMAL, the proto default
      fields(bytes, [&](int pf, int, const std::string& b, uint64_t v) {
        if (pf == 1) out.pieces.back() = b;
        if (pf == 2) std::memcpy(&out.scores.back(), b.data(), 4);
        if (pf == 3) out.types.back() = int32_t(v);
      });
    }
    if (f == 3) {
      fields(bytes, [&](int nf, int, const std::string& b, uint64_t v) {
        if (nf == 2) out.charsmap = b;
        if (nf == 3) out.add_dummy_prefix = v != 0;
        if (nf == 4) out.remove_extra_whitespaces = v != 0;
      });
    }
  });
  return out;
}

// The tokenizer metadata llama.cpp's converter writes for a T5 model (convert_hf_to_gguf.py).
void write_tokenizer_metadata(GgufTestWriter& w, const SpmFields& spm, bool with_charsmap) {
  w.string_kv("tokenizer.ggml.model", "t5");
  w.string_kv("tokenizer.ggml.pre", "default");
  w.string_array_kv("tokenizer.ggml.tokens", spm.pieces);
  w.f32_array_kv("tokenizer.ggml.scores", spm.scores);
  w.i32_array_kv("tokenizer.ggml.token_type", spm.types);
  w.bool_kv("tokenizer.ggml.add_space_prefix", spm.add_dummy_prefix);
  w.bool_kv("tokenizer.ggml.remove_extra_whitespaces", spm.remove_extra_whitespaces);
  if (with_charsmap) w.u8_array_kv("tokenizer.ggml.precompiled_charsmap", spm.charsmap);
  w.u32_kv("tokenizer.ggml.eos_token_id", 1);
  w.u32_kv("tokenizer.ggml.padding_token_id", 0);
}

// A precompiled charsmap taken apart (SentencePiece's layout: a uint32 trie size in bytes, the
// Darts-clone double-array trie, then the NUL-terminated normalised strings), so a test can
// corrupt one part at a time.
struct Charsmap {
  std::vector<uint32_t> units;
  std::string blob;

  static Charsmap split(const std::string& bytes) {
    uint32_t trie_bytes = 0;
    std::memcpy(&trie_bytes, bytes.data(), 4);
    Charsmap c;
    c.units.resize(trie_bytes / 4);
    std::memcpy(c.units.data(), bytes.data() + 4, trie_bytes);
    c.blob = bytes.substr(4 + trie_bytes);
    return c;
  }
  std::string join() const {
    std::string out = le<uint32_t>(uint32_t(units.size() * 4));
    out.append(reinterpret_cast<const char*>(units.data()), units.size() * 4);
    return out + blob;
  }
  // A unit's offset to its children (darts.h, DoubleArrayUnit::offset).
  static uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
  // The unit that matches the last byte of `key`, reached as commonPrefixSearch walks.
  size_t node_of(const std::string& key) const {
    size_t children = offset(units.at(0)), node = 0;
    for (const char ch : key) {
      node = children ^ uint8_t(ch);
      if ((units.at(node) & ((1u << 31) | 0xFF)) != uint8_t(ch)) throw std::logic_error("the table has no such key");
      children = node ^ offset(units[node]);
    }
    return node;
  }
  // The unit that holds the value (the string's offset) of the rule for exactly `key`.
  size_t leaf_of(const std::string& key) const {
    const size_t node = node_of(key);
    if (((units[node] >> 8) & 1) == 0) throw std::logic_error("the key has no rule of its own");
    return node ^ offset(units[node]);
  }
};

// A hand-built table with one rule, "a" -> "x". With `loop`, the state after "a" is the root's
// again: every further "a" matches once more, so a long run of "a" gives more matches than
// SentencePiece's normaliser has room for (32). Without, "a"'s children are a block of their own.
std::string one_rule_charsmap(bool loop) {
  Charsmap c;
  c.units.assign(768, 0);
  c.units[0] = 256u << 10;  // the root's children at 256 ^ byte
  const uint32_t a = 256u ^ uint32_t('a');
  const uint32_t children = loop ? 256u : 512u;
  c.units[a] = ((a ^ children) << 10) | (1u << 8) | uint32_t('a');  // label "a", has a rule
  c.units[children] = 1u << 31;                                     // the rule's value: offset 0, "x"
  c.units[256] = 1u << 31;  // a zero unit there would match the byte 0 (label 0) and lead back to itself
  c.blob = std::string("x\0", 2);
  return c.join();
}

double rel_l2(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

// The types ComfyUI-GGUF's convert.py picks for an fp32 source: 1-D, <= 1024 elements and
// `.modulation` F32; matrices quantised (here Q8_0; F16 for the FFN, as a mixed file has).
uint32_t converter_type(const std::string& name, const at::Tensor& t) {
  if (t.dim() == 1 || t.numel() <= 1024 || name.find(".modulation") != std::string::npos || t.dim() > 4) return kTF32;
  if (name.find(".ffn.") != std::string::npos) return kTF16;
  return kTQ8_0;
}

// |x - d·q| <= d/2 + 127·|d - fp16(d)| <= 0.57·d per 32-element block, d = max|block| / 127.
void expect_q8_0_close(const at::Tensor& got, const at::Tensor& want, const std::string& name) {
  const at::Tensor blocks = want.reshape({-1, 32});
  const at::Tensor d = std::get<0>(blocks.abs().max(1, true)) / 127.0;
  const at::Tensor err = (got.reshape({-1, 32}) - blocks).abs();
  const double worst = (err / (d + 1e-12)).max().item<double>();
  QVERIFY2(worst <= 0.57, qPrintable(QString::fromStdString(name) + ": error " + QString::number(worst) + " d"));
}

}  // namespace

class tst_GgufModels : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const std::string& name) const { return (dir_.path() + "/").toStdString() + name; }

  // A unigram tokenizer with SentencePiece's default NFKC normalisation, as umT5's, trained once.
  std::string nfkc_model() {
    const std::string model = path("nfkc.model");
    if (QFile::exists(QString::fromStdString(model))) return model;
    {
      std::ofstream corpus(path("corpus.txt"));
      const char* words[] = {"a red circle", "a blue square", "moving right", "moving left", "on a dark background",
                             "the camera pans", "over the landscape", "two spaces", "green", "slowly"};
      for (int i = 0; i < 300; ++i) corpus << words[i % 10] << ' ' << words[(i * 7 + 3) % 10] << ".\n";
    }
    t5::train_sentencepiece("--input=" + path("corpus.txt") + " --model_prefix=" + path("nfkc") +
                            " --vocab_size=120 --model_type=unigram --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1"
                            " --hard_vocab_limit=false --num_threads=1 --minloglevel=2");
    return model;
  }

  // A text-encoder GGUF carrying `spm` as llama.cpp's tokenizer metadata; returns its path.
  std::string tokenizer_gguf(const std::string& name, const SpmFields& spm) {
    GgufTestWriter w;
    w.string_kv("general.architecture", "t5encoder");
    write_tokenizer_metadata(w, spm, !spm.charsmap.empty());
    const std::string file = path(name);
    write_file(file, w.bytes());
    return file;
  }

  // What loading `file`'s tokenizer and encoding `text` with it throws ("" when it works).
  static std::string tokenizer_error(const std::string& file, const std::string& text) {
    return error_of([&] {
      const auto tok = t5::load_umt5_embedded_tokenizer(file);
      if (tok) (void)tok->ids(text);
    });
  }

 private Q_SLOTS:
  void initTestCase() { c10::NoGradGuard no_grad; }

  void wanDitFromGguf() {
    c10::NoGradGuard no_grad;
    const wan::WanConfig cfg = wan::wan_tiny_config();
    wan::WanSaveOptions so;
    so.layout = wan::WanLayout::SingleFile;
    so.prefix = "";  // convert.py strips model.diffusion_model.
    const std::string st_path = path("tiny_dit.safetensors");
    wan::wan_save_tiny(st_path, cfg, 7, so);
    const auto st = model_io::SafetensorsFile::open(st_path);
    GgufTestWriter w;
    w.string_kv("general.architecture", "wan");
    w.u32_kv("general.file_type", 7);  // MOSTLY_Q8_0
    // The head count of a tiny model is not the 5B's dim / 128: our config hint, as a string key.
    w.string_kv("vidgraph_wan_config", st.metadata().at("vidgraph_wan_config"));
    std::map<std::string, uint32_t> types;
    for (const std::string& name : st.names()) {
      const at::Tensor t = st.load(name);
      types[name] = converter_type(name, t);
      if (name == "head.head.weight") {  // [192, 64]: stored as [48, 256] with its torch shape recorded
        add_torch_tensor(w, name, t.reshape({-1, 256}), kTQ8_0);
        w.i32_array_kv("comfy.gguf.orig_shape." + name, {int32_t(t.size(0)), int32_t(t.size(1))});
        continue;
      }
      add_torch_tensor(w, name, t, types[name]);
    }
    // A file named as QuantStack's, read by its magic bytes.
    const std::string gguf_path = path("Wan2.2-TI2V-5B-Q8_0.gguf");
    write_file(gguf_path, w.bytes());

    // The same file with its config hint damaged is refused with a sentence, never read as another model.
    GgufTestWriter damaged;
    damaged.string_kv("general.architecture", "wan");
    damaged.string_kv("vidgraph_wan_config", "{\"dim\": 64,");
    add_torch_tensor(damaged, "patch_embedding.weight", st.load("patch_embedding.weight"), kTF32);
    const std::string damaged_path = path("damaged-hint.gguf");
    write_file(damaged_path, damaged.bytes());
    const std::string damaged_error = error_of([&] { wan::wan_inspect_checkpoint(damaged_path); });
    QVERIFY2(damaged_error.find(damaged_path) != std::string::npos &&
                 damaged_error.find("vidgraph_wan_config metadata that is not a JSON object") != std::string::npos,
             damaged_error.c_str());

    const wan::WanCheckpointInfo info = wan::wan_inspect_checkpoint(gguf_path);
    QCOMPARE(info.layout, wan::WanLayout::SingleFile);
    QCOMPARE(info.config.dim, cfg.dim);
    QCOMPARE(info.config.num_layers, cfg.num_layers);
    QCOMPARE(info.tensors.at("blocks.0.self_attn.q.weight").dtype, std::string("Q8_0"));
    QCOMPARE(info.tensors.at("patch_embedding.weight").shape, (std::vector<int64_t>{cfg.dim, cfg.in_dim, 1, 2, 2}));

    wan::WanLoadOptions lo;
    wan::WanModel ref = wan::wan_load_model(st_path, lo);
    wan::WanModel q = wan::wan_load_model(gguf_path, lo);
    int quantised = 0;
    for (const auto& [name, param] : wan::wan_named_parameters(*q)) {
      const at::Tensor want = st.load(name);
      if (types[name] == kTQ8_0) {
        expect_q8_0_close(param, want, name);
        ++quantised;
      } else if (types[name] == kTF16) {
        QVERIFY2(at::equal(param, want.to(at::kHalf).to(at::kFloat)), name.c_str());
      } else {
        QVERIFY2(at::equal(param, want), name.c_str());
      }
    }
    QVERIFY(quantised > 10);

    at::Generator gen = at::detail::createCPUGenerator(3);
    const at::Tensor x = at::randn({1, cfg.in_dim, 2, 4, 4}, gen);
    const at::Tensor t = at::full({1}, 500.0);
    const at::Tensor ctx = at::randn({1, 5, cfg.text_dim}, gen);
    const at::Tensor want = ref->forward(x, t, ctx, {});
    const at::Tensor got = q->forward(x, t, ctx, {});
    const double err = rel_l2(got, want);
    qInfo("tiny DiT, Q8_0 + F16 + F32 GGUF vs fp32 safetensors: output rel-L2 %.2e", err);
    QVERIFY2(err < 2e-2, qPrintable(QString::number(err)));  // 7.8e-3 seen
    QVERIFY(err > 0);  // the quantised weights are really used
  }

  // Other GGUFs are refused naming what they are.
  void ditRefusesOtherModels() {
    GgufTestWriter w;
    w.string_kv("general.architecture", "flux");
    add_torch_tensor(w, "patch_embedding.weight", at::randn({8, 4}), kTF32);
    const std::string file = path("flux.gguf");
    write_file(file, w.bytes());
    const std::string message = error_of([&] { wan::wan_inspect_checkpoint(file); });
    QVERIFY2(message.find("is a GGUF of a 'flux' model") != std::string::npos, message.c_str());
  }

  // city96's umT5 GGUF: llama.cpp names, Q8_0 matrices, F32 norms and relative bias, arch t5encoder.
  void umt5FromGguf() {
    c10::NoGradGuard no_grad;
    const t5::Umt5Config cfg = t5::Umt5Config::tiny(96);
    const auto enc = t5::make_seeded_umt5(cfg, 5);
    const std::string spiece = nfkc_model();
    const SpmFields spm = read_spm(spiece);
    QVERIFY2(spm.pieces.size() > 20, qPrintable(QString::number(spm.pieces.size())));
    QVERIFY2(!spm.charsmap.empty(), "the tokenizer normalises with NFKC tables");
    GgufTestWriter w;
    w.string_kv("general.architecture", "t5encoder");
    GgufTestWriter bare = w;  // the same file without the normaliser's tables
    write_tokenizer_metadata(w, spm, true);
    write_tokenizer_metadata(bare, spm, false);
    std::map<std::string, at::Tensor> official;
    const auto llama_name = [](const std::string& k) {
      if (k == "token_embedding.weight") return std::string("token_embd.weight");
      if (k == "norm.weight") return std::string("enc.output_norm.weight");
      const std::string i = k.substr(7, k.find('.', 7) - 7), rest = k.substr(k.find('.', 7) + 1);
      const std::map<std::string, std::string> m = {
          {"norm1.weight", "attn_norm.weight"}, {"attn.q.weight", "attn_q.weight"}, {"attn.k.weight", "attn_k.weight"},
          {"attn.v.weight", "attn_v.weight"},   {"attn.o.weight", "attn_o.weight"},
          {"pos_embedding.embedding.weight", "attn_rel_b.weight"}, {"norm2.weight", "ffn_norm.weight"},
          {"ffn.gate.0.weight", "ffn_gate.weight"}, {"ffn.fc1.weight", "ffn_up.weight"},
          {"ffn.fc2.weight", "ffn_down.weight"}};
      return "enc.blk." + i + "." + m.at(rest);
    };
    for (const auto& item : enc->named_parameters(true)) {
      const at::Tensor t = item.value().detach();
      official[item.key()] = t;
      add_torch_tensor(w, llama_name(item.key()), t, t.dim() == 2 && t.size(1) % 32 == 0 ? kTQ8_0 : kTF32);
    }
    const std::string file = path("umt5-xxl-encoder-Q8_0.gguf");
    write_file(file, w.bytes());
    write_file(path("umt5-no-charsmap.gguf"), bare.bytes());

    const auto loaded = t5::load_umt5(file, c10::Device(c10::kCPU), at::kFloat);
    QCOMPARE(loaded->config().num_layers, cfg.num_layers);
    QCOMPARE(loaded->config().num_heads, cfg.num_heads);
    for (const auto& item : loaded->named_parameters(true)) {
      const at::Tensor& want = official.at(item.key());
      if (want.dim() == 2 && want.size(1) % 32 == 0) {
        expect_q8_0_close(item.value(), want, item.key());
      } else {
        QVERIFY2(at::equal(item.value(), want), item.key().c_str());
      }
    }
    const at::Tensor ids = at::arange(12, at::kLong).unsqueeze(0);
    const at::Tensor mask = at::ones({1, 12}, at::kLong);
    const double err = rel_l2(loaded->forward(ids, mask), enc->forward(ids, mask));
    qInfo("tiny umT5, Q8_0 GGUF vs fp32: output rel-L2 %.2e", err);
    QVERIFY2(err < 6e-2, qPrintable(QString::number(err)));  // 3.3e-2 seen: 2 tiny random layers amplify
    // The tokenizer rebuilt from the metadata gives spiece.model's ids, text that NFKC changes included
    // (its tables came along); without the tables that text tokenizes otherwise.
    std::string origin;
    const auto rebuilt = t5::load_umt5_embedded_tokenizer(file, &origin);
    QVERIFY(rebuilt.has_value());
    QVERIFY2(origin == file + "' metadata 'tokenizer.ggml", origin.c_str());
    const auto no_tables = t5::load_umt5_embedded_tokenizer(path("umt5-no-charsmap.gguf"));
    QVERIFY(no_tables.has_value());
    const t5::Umt5Tokenizer original = t5::load_umt5_tokenizer(spiece);
    QCOMPARE(rebuilt->vocab_size(), original.vocab_size());
    // U+1D43 MODIFIER LETTER SMALL A: NFKC makes it "a"; the prompt cleaning leaves it alone.
    const std::string wide = "\xe1\xb5\x83 red circle";
    for (const std::string text : {"a red circle moving right on a dark blue background",
                                   "the camera pans left over the landscape", "  two   spaces ", wide.c_str()}) {
      QCOMPARE(rebuilt->ids(text), original.ids(text));
    }
    QCOMPARE(original.ids(wide), original.ids("a red circle"));
    QVERIFY(no_tables->ids(wide) != original.ids(wide));
    // Metadata that does not add up is refused by key.
    GgufTestWriter broken;
    broken.string_kv("general.architecture", "t5encoder");
    SpmFields short_scores = spm;
    short_scores.scores.pop_back();
    write_tokenizer_metadata(broken, short_scores, true);
    write_file(path("umt5-broken.gguf"), broken.bytes());
    const std::string why = error_of([&] { t5::load_umt5_embedded_tokenizer(path("umt5-broken.gguf")); });
    QVERIFY2(why.find("'tokenizer.ggml.scores' has " + std::to_string(spm.pieces.size() - 1) + " elements") !=
                 std::string::npos, why.c_str());

    GgufTestWriter other;
    other.string_kv("general.architecture", "llama");
    add_torch_tensor(other, "token_embd.weight", at::randn({4, 32}), kTF32);
    write_file(path("llama.gguf"), other.bytes());
    const std::string message = error_of([&] { t5::load_umt5(path("llama.gguf")); });
    QVERIFY2(message.find("is a GGUF of a 'llama' model") != std::string::npos, message.c_str());
  }

  // A well-formed normaliser table passes the checks and encodes as spiece.model, the NFKC rules
  // included; the hand-built one-rule table the loop case below corrupts passes and applies its rule.
  void validCharsmapEncodes() {
    const std::string spiece = nfkc_model();
    const std::string file = tokenizer_gguf("valid-charsmap.gguf", read_spm(spiece));
    const auto rebuilt = t5::load_umt5_embedded_tokenizer(file);
    QVERIFY(rebuilt.has_value());
    const t5::Umt5Tokenizer original = t5::load_umt5_tokenizer(spiece);
    for (const std::string text :
         {"a red circle moving right", "\xe1\xb5\x83 red circle", "\xef\xbd\x81 blue square"}) {
      QCOMPARE(rebuilt->ids(text), original.ids(text));
    }
    SpmFields one_rule = read_spm(spiece);
    one_rule.charsmap = one_rule_charsmap(false);
    const auto a_to_x = t5::load_umt5_embedded_tokenizer(tokenizer_gguf("one-rule.gguf", one_rule));
    QVERIFY(a_to_x.has_value());
    QCOMPARE(a_to_x->ids("a red a"), a_to_x->ids("x red x"));
    QVERIFY(a_to_x->ids("a red a") != original.ids("a red a"));
  }

  // Normaliser tables that would make SentencePiece read outside them are refused before it loads
  // them, naming the file, the key and what is wrong.
  void corruptCharsmapRefused_data() {
    QTest::addColumn<QByteArray>("charsmap");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("why");
    const std::string valid = read_spm(nfkc_model()).charsmap;
    const Charsmap good = Charsmap::split(valid);
    const std::string wide_a = "\xe1\xb5\x83";  // U+1D43, which NFKC maps to "a"
    const QString text = QString::fromStdString(wide_a + " red circle");
    const auto row = [&](const char* name, const std::string& bytes, const QString& t, const char* why) {
      QTest::newRow(name) << QByteArray(bytes.data(), qsizetype(bytes.size())) << t << QString(why);
    };
    {
      std::string c = valid;  // the size says more than the whole table holds (SentencePiece's own check lets it by)
      const uint32_t past = uint32_t(valid.size() - 2);
      std::memcpy(c.data(), &past, 4);
      row("trie size past the end", c, text, "but only");
    }
    row("truncated in the trie", valid.substr(0, 4 + good.units.size() * 2), text, "but only");
    row("truncated to 3 bytes", valid.substr(0, 3), text, "too short");
    {
      Charsmap c = good;  // the strings cut off: every rule's value points past the end
      c.blob.clear();
      row("strings cut off", c.join(), text, "outside");
    }
    {
      Charsmap c = good;  // after U+1D43's first byte, children 2^28 units away
      const size_t node = c.node_of(wide_a.substr(0, 1));
      c.units[node] = (c.units[node] & 0x1ffu) | (1u << 9) | (1u << 30);
      row("unit pointing outside the trie", c.join(), text, "outside the trie");
    }
    {
      Charsmap c = good;  // U+1D43's rule points 2 GB past its strings
      c.units[c.leaf_of(wide_a)] = (1u << 31) | 0x7fffff00u;
      row("value pointing outside the strings", c.join(), text, "outside");
    }
    {
      Charsmap c = good;  // U+1D43's rule points at a last string with no NUL after it
      c.units[c.leaf_of(wide_a)] = (1u << 31) | uint32_t(c.blob.size());
      c.blob += "abc";
      row("string without NUL", c.join(), text, "not NUL-terminated");
    }
    row("rule loop", one_rule_charsmap(true), QString(64, 'a'), "loops");
  }
  void corruptCharsmapRefused() {
    QFETCH(QByteArray, charsmap);
    QFETCH(QString, text);
    QFETCH(QString, why);
    SpmFields spm = read_spm(nfkc_model());
    spm.charsmap = charsmap.toStdString();
    const std::string file = tokenizer_gguf("corrupt-charsmap.gguf", spm);
    const std::string message = tokenizer_error(file, text.toStdString());
    QVERIFY2(message.find("GGUF '" + file + "'") != std::string::npos, message.c_str());
    QVERIFY2(message.find("'tokenizer.ggml.precompiled_charsmap'") != std::string::npos, message.c_str());
    QVERIFY2(message.find(why.toStdString()) != std::string::npos, message.c_str());
  }

  // Pieces, scores and types that libsentencepiece would refuse or misread are refused by key.
  void corruptPiecesRefused() {
    const SpmFields good = read_spm(nfkc_model());
    struct Case {
      const char* name;
      std::function<void(SpmFields&)> corrupt;
      std::string text, why;
    };
    const std::vector<Case> cases = {
        {"NaN score", [](SpmFields& s) { s.scores[5] = std::nanf(""); }, "a", "'tokenizer.ggml.scores' gives token 5"},
        {"infinite score", [](SpmFields& s) { s.scores[7] = -HUGE_VALF; }, "a", "not a finite number"},
        {"no unknown piece", [](SpmFields& s) { s.types[2] = 1; }, "a", "marks no token unknown"},
        {"two unknown pieces", [](SpmFields& s) { s.types[9] = 2; }, "a", "marks 2 tokens unknown"},
        {"empty piece", [](SpmFields& s) { s.pieces[6].clear(); }, "a", "token 6 is empty"},
        {"NUL in a piece", [](SpmFields& s) { s.pieces[6] += std::string(1, '\0'); }, "a", "token 6 holds a NUL"},
        {"duplicate piece", [](SpmFields& s) { s.pieces[8] = s.pieces[7]; }, "a", "twice"},
        {"one byte piece", [](SpmFields& s) { s.pieces[9] = "<0x41>", s.types[9] = 6; }, "a", "all 256"},
        {"misnamed byte piece", [](SpmFields& s) { s.types[9] = 6; }, "a", "not <0xXX>"},
        {"no pieces to encode with",
         [](SpmFields& s) {
           for (size_t i = 3; i < s.types.size(); ++i) s.types[i] = 3;
         },
         "a", "no normal"},
        {"65 nested user-defined pieces",
         [](SpmFields& s) {
           for (int i = 1; i <= 65; ++i) {
             s.pieces.push_back(std::string(size_t(i), 'Q'));  // no trained piece holds a capital
             s.scores.push_back(0.0f);
             s.types.push_back(4);
           }
         },
         std::string(80, 'Q'), "a prefix of the next"},
    };
    for (const Case& c : cases) {
      SpmFields spm = good;
      c.corrupt(spm);
      const std::string file = tokenizer_gguf("corrupt-pieces.gguf", spm);
      const std::string message = tokenizer_error(file, c.text);
      QVERIFY2(message.find("GGUF '" + file + "'") != std::string::npos, (c.name + (": " + message)).c_str());
      QVERIFY2(message.find(c.why) != std::string::npos, (c.name + (": " + message)).c_str());
    }
  }
};

QTEST_GUILESS_MAIN(tst_GgufModels)
#include "tst_gguf_models.moc"
