// Tests of the umT5 text encoder and tokenizer (models/t5): relative-position buckets, the
// reference's text cleaning, tokenization (EOS, truncation, padding, mask) on a SentencePiece model
// the test trains, the encoder against an independent per-head reference, masking, prompt trimming
// and padding, key mapping, and loading every layout (official .pth/safetensors, HF shards, prefixed
// repack, ComfyUI's umt5_xxl_fp16 / fp8_e4m3fn_scaled files with their embedded tokenizer) with clear
// errors on bad files, and the check that a tokenizer belongs to its encoder.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros.h>

#include "models/io/safetensors.h"
#include "models/io/scaled_fp8.h"
#include "models/io/tensor_file.h"
#include "models/t5/umt5_checkpoint.h"
#include "models/t5/sentencepiece_library.h"
#include "models/t5/umt5_prompt.h"
#include "model_io_pth_writer.h"
#include "models/t5/unicode_text.h"
#include "prompt_clean_cases.h"

#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>

using namespace vidgraph::t5;
using vidgraph::model_io::NamedTensors;

namespace {

// An independent reference of one forward: per head, explicit bias table, as in t5.py.
at::Tensor reference_forward(const Umt5Encoder& enc, const at::Tensor& ids, const at::Tensor& mask) {
  const Umt5Config& c = enc.config();
  const auto p = enc.named_parameters(true);
  auto rms = [&](const at::Tensor& x, const at::Tensor& w) {
    return w * (x / (x.pow(2).mean({-1}, true) + c.eps).sqrt());
  };
  at::Tensor x = p["token_embedding.weight"].index_select(0, ids.flatten()).view({ids.size(0), ids.size(1), c.dim});
  const int64_t l = ids.size(1), d = c.dim_attn / c.num_heads;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    const at::Tensor h = rms(x, p[b + "norm1.weight"]);
    const at::Tensor q = h.matmul(p[b + "attn.q.weight"].t()), k = h.matmul(p[b + "attn.k.weight"].t()),
                     v = h.matmul(p[b + "attn.v.weight"].t());
    std::vector<at::Tensor> heads;
    for (int64_t n = 0; n < c.num_heads; ++n) {
      at::Tensor bias = at::zeros({l, l});
      for (int64_t qi = 0; qi < l; ++qi) {
        for (int64_t kj = 0; kj < l; ++kj) {
          const int64_t bucket = relative_position_bucket(kj - qi, c.num_buckets, c.max_dist);
          bias[qi][kj] = p[b + "pos_embedding.embedding.weight"][bucket][n];
        }
      }
      const at::Tensor qn = q.slice(-1, n * d, (n + 1) * d), kn = k.slice(-1, n * d, (n + 1) * d);
      at::Tensor logits = qn.matmul(kn.transpose(1, 2)) + bias;  // [B,L,L]
      logits = logits.masked_fill(mask.view({mask.size(0), 1, l}) == 0, -3.4e38);
      heads.push_back(at::softmax(logits, -1).matmul(v.slice(-1, n * d, (n + 1) * d)));
    }
    x = x + at::cat(heads, -1).matmul(p[b + "attn.o.weight"].t());
    const at::Tensor h2 = rms(x, p[b + "norm2.weight"]);
    const at::Tensor g = h2.matmul(p[b + "ffn.gate.0.weight"].t());
    const at::Tensor gelu = 0.5 * g * (1 + at::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g.pow(3))));
    x = x + (h2.matmul(p[b + "ffn.fc1.weight"].t()) * gelu).matmul(p[b + "ffn.fc2.weight"].t());
  }
  return rms(x, p["norm.weight"]);
}

NamedTensors params_of(const Umt5Encoder& e) {
  NamedTensors out;
  for (const auto& item : e.named_parameters(true)) {
    out.emplace_back(item.key(), item.value().detach().clone());
  }
  return out;
}

// The bytes of a file as a 1-D U8 tensor (ComfyUI's `spiece_model`).
at::Tensor file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  at::Tensor t = at::empty({int64_t(data.size())}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(t.data_ptr(), data.data(), data.size());
  return t;
}

// ComfyUI quantises the 7 linears of each block (q, k, v, o, wi_0, wi_1, wo).
bool comfy_quantises(const std::string& hf_key) {
  for (const char* tail : {"SelfAttention.q.weight", "SelfAttention.k.weight", "SelfAttention.v.weight",
                           "SelfAttention.o.weight", "DenseReluDense.wi_0.weight", "DenseReluDense.wi_1.weight",
                           "DenseReluDense.wo.weight"}) {
    const std::string t = tail;
    if (hf_key.size() > t.size() && hf_key.compare(hf_key.size() - t.size(), t.size(), t) == 0) return true;
  }
  return false;
}

double rel_l2(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

}  // namespace

class tst_TextEncoder : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void relativeBuckets_data();
  void relativeBuckets();
  void cleaning_data();
  void cleaning();
  void cleaningFeedsTokenizer();
  void tokenizerPadsAndTruncates();
  void encoderMatchesReference();
  void paddingIsMasked();
  void promptsTrimmedAndPadded();
  void promptSizeLimits();
  void keyMapping_data();
  void keyMapping();
  void loadLayouts_data();
  void loadLayouts();
  void badCheckpoints();
  void comfyFiles_data();
  void comfyFiles();
  void tokenizerBelongsToEncoder();

 private:
  QTemporaryDir dir_;
  std::string spm_;
  std::optional<Umt5Tokenizer> tok_;
  std::shared_ptr<Umt5Encoder> enc_;
  std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }
};

void tst_TextEncoder::initTestCase() {
  QVERIFY(dir_.isValid());
  const std::string corpus = path("corpus.txt");
  {
    std::ofstream out(corpus);
    const char* subjects[] = {"a red fox",       "the old lighthouse", "two cats",         "a golden retriever",
                              "rain clouds",     "a small boat",       "the city skyline", "an astronaut",
                              "cherry blossoms", "a steam train"};
    const char* verbs[] = {"runs across", "glows above",   "sleeps beside", "jumps over", "drifts toward",
                           "sails past",  "shines behind", "walks through", "falls onto", "crosses"};
    const char* objects[] = {"the snowy field",   "a quiet harbor", "the wooden table", "a muddy river",
                             "the mountain pass", "a neon street",  "the sandy beach",  "a bamboo forest"};
    for (int i = 0; i < 400; ++i) {
      out << subjects[i % 10] << ' ' << verbs[(i / 10) % 10] << ' ' << objects[(i * 7) % 8]
          << ", cinematic lighting, 4k, slow motion.\n";
    }
  }
  spm_ = path("tiny_spm");
  train_sentencepiece("--input=" + corpus + " --model_prefix=" + spm_ +
                      " --vocab_size=200 --model_type=unigram --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1"
                      " --hard_vocab_limit=false --minloglevel=2");
  spm_ += ".model";
  tok_ = load_umt5_tokenizer(spm_);
  enc_ = make_seeded_umt5(Umt5Config::tiny(tok_->vocab_size()), 77);
}

void tst_TextEncoder::relativeBuckets_data() {
  QTest::addColumn<qlonglong>("rel");
  QTest::addColumn<qlonglong>("bucket");
  // rel = key - query; 32 buckets, max distance 128 (hand-computed from the formula).
  const std::pair<int, int> rows[] = {{0, 0},    {-1, 1},    {1, 17},    {-7, 7},    {7, 23},    {-8, 8},
                                      {8, 24},   {-12, 9},   {-16, 10},  {16, 26},   {-20, 10},  {-32, 12},
                                      {-64, 14}, {-100, 15}, {-127, 15}, {-128, 15}, {1000, 31}, {-1000, 15}};
  for (const auto& [rel, bucket] : rows) {
    QTest::addRow("rel %d", rel) << qlonglong(rel) << qlonglong(bucket);
  }
}

void tst_TextEncoder::relativeBuckets() {
  QFETCH(qlonglong, rel);
  QFETCH(qlonglong, bucket);
  QCOMPARE(qlonglong(relative_position_bucket(rel, 32, 128)), bucket);
}

void tst_TextEncoder::cleaning_data() {
  QTest::addColumn<QByteArray>("in");
  QTest::addColumn<QByteArray>("out");
  for (const PromptCleanCase& c : kPromptCleanCases) QTest::newRow(c.name) << QByteArray(c.input) << QByteArray(c.expected);
}

void tst_TextEncoder::cleaning() {
  QFETCH(QByteArray, in);
  QFETCH(QByteArray, out);
  // Rows whose cleaning composes (NFC), maps width forms (NFKC) or upper-cases through ICU.
  static const std::set<std::string> kNeedIcu = {"nfd input", "fullwidth", "all caps entity",
                                                  "entity then combining", "chinese"};
  const bool needs_icu = kNeedIcu.count(QTest::currentDataTag()) > 0;
  if (needs_icu && !have_icu()) QSKIP("built without ICU: no NFC/NFKC");
  QCOMPARE(QByteArray::fromStdString(Umt5Tokenizer::clean(in.toStdString())), out);
}

void tst_TextEncoder::cleaningFeedsTokenizer() {
  // Curly quotes, a BOM and an NBSP tokenize as their cleaned forms.
  QCOMPARE(tok_->ids("\xE2\x80\x9C" "a red fox\xE2\x80\x9D\xEF\xBB\xBF\xC2\xA0jumps"), tok_->ids("\"a red fox\" jumps"));
}

void tst_TextEncoder::tokenizerPadsAndTruncates() {
  const std::vector<int64_t> ids = tok_->ids("a red fox  jumps over the snowy field");
  QVERIFY(ids.size() > 3);
  QCOMPARE(ids.back(), int64_t(1));
  QCOMPARE(tok_->ids("a red fox jumps over the snowy field"), ids);  // cleaning before tokenizing
  std::string long_text;
  for (int i = 0; i < 200; ++i) {
    long_text += "two cats sail past the sandy beach ";
  }
  const TokenBatch batch = tok_->encode({"a red fox  jumps over the snowy field", long_text}, 512);
  QCOMPARE(batch.ids.sizes().vec(), (std::vector<int64_t>{2, 512}));
  QCOMPARE(batch.mask.sum(1)[0].item<int64_t>(), int64_t(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    QCOMPARE(batch.ids[0][int64_t(i)].item<int64_t>(), ids[i]);
  }
  QCOMPARE(batch.ids[0].slice(0, int64_t(ids.size())).abs().sum().item<int64_t>(), int64_t(0));  // pad id 0
  QCOMPARE(batch.mask[1].sum().item<int64_t>(), int64_t(512));
  QCOMPARE(batch.ids[1][511].item<int64_t>(), int64_t(1));  // EOS kept after truncation
  QCOMPARE(batch.ids[1].slice(0, 0, 511).eq(1).sum().item<int64_t>(), int64_t(0));
}

void tst_TextEncoder::encoderMatchesReference() {
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor ids = at::randint(3, tok_->vocab_size(), {2, 12}, gen, at::TensorOptions().dtype(at::kLong));
  at::Tensor mask = at::ones({2, 12}, at::kLong);
  mask[1].slice(0, 7).fill_(0);
  const at::Tensor got = enc_->forward(ids, mask);
  QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{2, 12, 64}));
  const at::Tensor want = reference_forward(*enc_, ids, mask);
  const double err = (got - want).abs().max().item<double>();
  QVERIFY2(err < 1e-4, std::to_string(err).c_str());
  // bf16 weights: close to fp32.
  auto bf16 = make_seeded_umt5(enc_->config(), 77);
  bf16->to(at::kBFloat16);
  const at::Tensor low = bf16->forward(ids, mask).to(at::kFloat);
  const double rel = ((low - got).norm() / got.norm()).item<double>();
  QVERIFY2(rel < 0.05, std::to_string(rel).c_str());
}

void tst_TextEncoder::paddingIsMasked() {
  const TokenBatch batch = tok_->encode({"an astronaut walks through a neon street"}, 32);
  const int64_t real = batch.mask.sum().item<int64_t>();
  at::Tensor other = batch.ids.clone();
  other[0].slice(0, real).fill_(5);  // different ids in the padded positions
  const at::Tensor a = enc_->forward(batch.ids, batch.mask);
  const at::Tensor b = enc_->forward(other, batch.mask);
  QVERIFY(at::allclose(a[0].slice(0, 0, real), b[0].slice(0, 0, real), 1e-5, 1e-6));
  // Real tokens do see each other.
  at::Tensor changed = batch.ids.clone();
  changed[0][0] = 7;
  const at::Tensor c = enc_->forward(changed, batch.mask);
  QVERIFY((c[0][real - 1] - a[0][real - 1]).abs().max().item<double>() > 1e-4);
}

void tst_TextEncoder::promptsTrimmedAndPadded() {
  const std::vector<std::string> texts = {"a small boat sails past a quiet harbor", "rain"};
  const std::vector<at::Tensor> ctx = encode_prompts(*enc_, *tok_, texts, 64);
  QCOMPARE(ctx.size(), size_t(2));
  QCOMPARE(ctx[0].size(0), int64_t(tok_->ids(texts[0]).size()));
  QCOMPARE(ctx[1].size(0), int64_t(tok_->ids(texts[1]).size()));
  const TokenBatch batch = tok_->encode(texts, 64);
  QVERIFY(at::allclose(ctx[0], enc_->forward(batch.ids, batch.mask)[0].slice(0, 0, ctx[0].size(0))));
  const at::Tensor padded = pad_context(ctx, 512);
  QCOMPARE(padded.sizes().vec(), (std::vector<int64_t>{2, 512, 64}));
  QVERIFY(at::equal(padded[1].slice(0, 0, ctx[1].size(0)), ctx[1]));
  QCOMPARE(padded[1].slice(0, ctx[1].size(0)).abs().sum().item<double>(), 0.0);
}

// Long prompts keep the reference's truncation to `length` tokens; absurd ones (over 100,000
// characters) are refused before tokenizing, with the size and the limit.
void tst_TextEncoder::promptSizeLimits() {
  std::string long_prompt;
  while (long_prompt.size() < 4000) long_prompt += "a small boat sails past a quiet harbor ";
  const std::vector<at::Tensor> ctx = encode_prompts(*enc_, *tok_, {long_prompt}, 64);
  QCOMPARE(ctx[0].size(0), int64_t(64));  // cut to 63 tokens + EOS, as the reference does
  QCOMPARE(utf8_char_count("caf\xc3\xa9"), int64_t(4));
  QCOMPARE(check_prompt_size(std::string(kMaxPromptChars, 'a'), "Prompt"), std::string());
  const std::string huge(31 << 20, 'a');  // a 31 MB "prompt"
  try {
    encode_prompts(*enc_, *tok_, {"rain", huge}, 64);
    QFAIL("a 31 MB prompt was encoded");
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    QVERIFY2(message.find("Prompt 2 has 32505856 characters") != std::string::npos, e.what());
    QVERIFY2(message.find("more than the 100000") != std::string::npos, e.what());
  }
}

void tst_TextEncoder::keyMapping_data() {
  QTest::addColumn<QString>("official");
  QTest::addColumn<QString>("hf");
  auto row = [](const char* o, const char* h) { QTest::newRow(o) << QString(o) << QString(h); };
  row("token_embedding.weight", "shared.weight");
  row("norm.weight", "encoder.final_layer_norm.weight");
  row("blocks.0.norm1.weight", "encoder.block.0.layer.0.layer_norm.weight");
  row("blocks.3.attn.q.weight", "encoder.block.3.layer.0.SelfAttention.q.weight");
  row("blocks.23.attn.o.weight", "encoder.block.23.layer.0.SelfAttention.o.weight");
  row("blocks.5.pos_embedding.embedding.weight",
      "encoder.block.5.layer.0.SelfAttention.relative_attention_bias.weight");
  row("blocks.1.norm2.weight", "encoder.block.1.layer.1.layer_norm.weight");
  row("blocks.1.ffn.gate.0.weight", "encoder.block.1.layer.1.DenseReluDense.wi_0.weight");
  row("blocks.1.ffn.fc1.weight", "encoder.block.1.layer.1.DenseReluDense.wi_1.weight");
  row("blocks.10.ffn.fc2.weight", "encoder.block.10.layer.1.DenseReluDense.wo.weight");
}

void tst_TextEncoder::keyMapping() {
  QFETCH(QString, official);
  QFETCH(QString, hf);
  QCOMPARE(QString::fromStdString(umt5_key_to_hf(official.toStdString())), hf);
  QCOMPARE(QString::fromStdString(umt5_key_from_hf(hf.toStdString())), official);
  QCOMPARE(umt5_key_from_hf("encoder.embed_tokens.weight"), std::string("token_embedding.weight"));
}

void tst_TextEncoder::loadLayouts_data() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("official safetensors") << "official.safetensors";
  QTest::newRow("official pth, bf16") << "official.pth";
  QTest::newRow("HF folder, 2 shards") << "hf";
  QTest::newRow("Comfy-style prefixed HF file") << "comfy.safetensors";
}

void tst_TextEncoder::loadLayouts() {
  QFETCH(QString, kind);
  const NamedTensors params = params_of(*enc_);
  std::string target = path(kind);
  at::ScalarType stored = at::kFloat;
  if (kind == "official.safetensors") {
    save_umt5_safetensors(*enc_, target);
  } else if (kind == "official.pth") {
    NamedTensors bf;
    for (const auto& [k, t] : params) {
      bf.emplace_back(k, t.to(at::kBFloat16));
    }
    vidgraph::test::write_pth(target, bf, true);
    stored = at::kBFloat16;
  } else if (kind == "hf") {
    QVERIFY(QDir(dir_.path()).mkpath("hf/text_encoder"));
    NamedTensors a, b;
    for (const auto& [k, t] : params) {
      (a.size() < params.size() / 2 ? a : b).emplace_back(umt5_key_to_hf(k), t);
    }
    vidgraph::model_io::save_safetensors(path("hf/text_encoder/model-00001-of-00002.safetensors"), a);
    vidgraph::model_io::save_safetensors(path("hf/text_encoder/model-00002-of-00002.safetensors"), b);
  } else {
    NamedTensors hf;
    for (const auto& [k, t] : params) {
      hf.emplace_back("text_encoders.umt5xxl.transformer." + umt5_key_to_hf(k), t.to(at::kHalf));
    }
    hf.emplace_back("text_encoders.umt5xxl.transformer.encoder.embed_tokens.weight",
                    params.front().second.to(at::kHalf));
    hf.emplace_back("text_encoders.umt5xxl.transformer.decoder.block.0.layer.0.SelfAttention.q.weight",
                    at::zeros({4, 4}));
    vidgraph::model_io::save_safetensors(target, hf);
    stored = at::kHalf;
  }
  const auto loaded = load_umt5(target, c10::Device(c10::kCPU), at::kFloat);
  QCOMPARE(loaded->config().num_layers, int64_t(2));
  QCOMPARE(loaded->config().num_heads, int64_t(4));
  QCOMPARE(loaded->config().vocab, tok_->vocab_size());
  const auto got = loaded->named_parameters(true);
  for (const auto& [k, t] : params) {
    QVERIFY2(at::equal(got[k], t.to(stored).to(at::kFloat)), k.c_str());
  }
  QCOMPARE(load_umt5(target)->named_parameters(true)["norm.weight"].scalar_type(), at::kBFloat16);  // default dtype
}

void tst_TextEncoder::badCheckpoints() {
  auto message = [](const std::string& file) -> std::string {
    try {
      load_umt5(file, c10::Device(c10::kCPU), at::kFloat);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  };
  NamedTensors wrong = params_of(*enc_);
  for (auto& [k, t] : wrong) {
    if (k == "blocks.1.ffn.fc2.weight") {
      t = t.narrow(1, 0, 100).contiguous();
    }
  }
  vidgraph::model_io::save_safetensors(path("wrong.safetensors"), wrong);
  std::string m = message(path("wrong.safetensors"));
  QVERIFY2(m.find("'blocks.1.ffn.fc2.weight' has shape [64, 100], expected [64, 128]") != std::string::npos, m.c_str());
  NamedTensors missing;
  for (const auto& [k, t] : params_of(*enc_)) {
    if (k != "blocks.1.norm2.weight") {
      missing.emplace_back(k, t);
    }
  }
  vidgraph::model_io::save_safetensors(path("missing.safetensors"), missing);
  m = message(path("missing.safetensors"));
  QVERIFY2(m.find("lacks 1 umT5 tensor(s), first 'blocks.1.norm2.weight'") != std::string::npos, m.c_str());
  vidgraph::model_io::save_safetensors(path("dit.safetensors"), {{"blocks.0.self_attn.q.weight", at::zeros({2, 2})}});
  m = message(path("dit.safetensors"));
  QVERIFY2(m.find("does not hold a umT5 encoder") != std::string::npos, m.c_str());
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, load_umt5_tokenizer(path("corpus.txt")));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, load_umt5_tokenizer(dir_.path().toStdString() + "/hf"));
  auto small = make_seeded_umt5(Umt5Config::tiny(50), 1);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encode_prompts(*small, *tok_, {"rain"}, 16));
}

void tst_TextEncoder::comfyFiles_data() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("umt5_xxl_fp16") << "fp16";
  QTest::newRow("umt5_xxl_fp8_e4m3fn_scaled (scale_weight)") << "fp8";
  QTest::newRow("fp8 scaled, newer weight_scale + comfy_quant") << "fp8new";
}

// ComfyUI's text encoders: HF names, no prefix, F16 (or the 7 linears per block F8_E4M3 + an F32
// scale each + the `scaled_fp8` marker), and the tokenizer as the U8 tensor `spiece_model`. They load
// without "tensor the umT5 encoder does not use", give the tokenizer back, and encode within fp16 /
// fp8 rounding of the fp32 original; the same file with every scale set to 1 (a loader that forgets
// the scale) is caught by the same checks.
void tst_TextEncoder::comfyFiles() {
  QFETCH(QString, kind);
  using namespace vidgraph::model_io;
  const NamedTensors params = params_of(*enc_);
  NamedTensors hf;
  std::set<std::string> quantise;
  for (const auto& [k, t] : params) {
    const std::string key = umt5_key_to_hf(k);
    hf.emplace_back(key, t.to(at::kHalf));
    if (kind != "fp16" && comfy_quantises(key)) {
      hf.back().second = t;  // quantised from fp32
      quantise.insert(key);
    }
  }
  QCOMPARE(int(quantise.size()), kind == "fp16" ? 0 : 2 * 7);
  hf.emplace_back("spiece_model", file_bytes(spm_));
  const std::string file = path("umt5_xxl_" + kind + ".safetensors");
  if (kind == "fp16") {
    save_safetensors(file, hf);
  } else {
    save_scaled_fp8_safetensors(file, hf, quantise, Fp8Format::E4M3FN,
                                kind == "fp8" ? Fp8ScaleNaming::ScaleWeight : Fp8ScaleNaming::WeightScale);
  }
  const int64_t headers_before = TensorFile::header_reads();
  const std::optional<Umt5Tokenizer> embedded = load_umt5_embedded_tokenizer(file);
  QVERIFY(embedded.has_value());
  QCOMPARE(embedded->vocab_size(), tok_->vocab_size());
  const std::string prompt = "two cats sleep beside the wooden table, cinematic lighting";
  QCOMPARE(embedded->ids(prompt), tok_->ids(prompt));

  // The encoder's output: fp16 weights (rel-L2 < 1e-2) or fp8 ones (each weight within fp8 rounding).
  const TokenBatch batch = tok_->encode({prompt}, 24);
  const at::Tensor want = enc_->forward(batch.ids, batch.mask);
  auto check = [&](const std::string& f, bool expect_ok) {
    const auto loaded = load_umt5(f, c10::Device(c10::kCPU), at::kFloat);
    QCOMPARE(loaded->config().vocab, tok_->vocab_size());
    QVERIFY(check_umt5_tokenizer(*embedded, loaded->config().vocab, f, "spiece_model").empty());
    const auto got = loaded->named_parameters(true);
    bool weights_ok = true;
    for (const auto& [k, t] : params) {
      if (!quantise.count(umt5_key_to_hf(k))) {
        QVERIFY2(at::equal(got[k], t.to(at::kHalf).to(at::kFloat)), k.c_str());
        continue;
      }
      const double scale = t.abs().max().item<double>() / 448.0;
      const at::Tensor bound = t.abs() * 0.0625 + scale * std::ldexp(1.0, -10);  // half an ulp / subnormal step
      weights_ok = weights_ok && ((got[k] - t).abs() <= bound).all().item<bool>();
    }
    const double err = rel_l2(loaded->forward(batch.ids, batch.mask), want);
    const double limit = kind == "fp16" ? 1e-2 : 0.2;  // measured: 1.2e-3, 8.4e-2; scale forgotten: 1.3
    QVERIFY2((weights_ok && err < limit) == expect_ok, qPrintable(QString("rel-L2 %1").arg(err)));
  };
  check(file, true);
  // The tokenizer and the weights came from one reading of the file's header (TensorFile::open_shared).
  QCOMPARE(TensorFile::header_reads() - headers_before, int64_t(1));
  if (kind == "fp16") return;
  const std::string forgot = path("umt5_xxl_" + kind + "_scale1.safetensors");
  {
    const auto st = SafetensorsFile::open(file);
    NamedTensors out;
    std::map<std::string, std::string> dtypes;
    for (const std::string& name : st.names()) {
      const auto f8 = fp8_format_of(st.entry(name).dtype);
      at::Tensor t = f8 ? fp8_encode(st.load(name), *f8) : st.load(name);
      if (name.find("scale_weight") != std::string::npos || name.find("weight_scale") != std::string::npos) {
        t = at::ones_like(t);
      }
      if (f8) dtypes[name] = st.entry(name).dtype;
      out.emplace_back(name, t);
    }
    save_safetensors(forgot, out, {}, dtypes);
  }
  check(forgot, false);
}

// A tokenizer of another model is an error (or a warning where the sizes cannot tell); the demo
// model's own pair passes.
void tst_TextEncoder::tokenizerBelongsToEncoder() {
  const int64_t n = tok_->vocab_size();
  QCOMPARE(tok_->piece_id("<pad>"), int64_t(0));
  QCOMPARE(tok_->piece_id("</s>"), int64_t(1));
  QCOMPARE(tok_->piece_id("<unk>"), int64_t(2));
  QCOMPARE(check_umt5_tokenizer(*tok_, enc_->config().vocab, "enc", "tok"), std::string());
  auto error = [&](const Umt5Tokenizer& t, int64_t rows) -> std::string {
    try {
      check_umt5_tokenizer(t, rows, "enc.safetensors", "tok.model");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string m = error(*tok_, n - 1);
  QVERIFY2(m.find("'tok.model' does not belong to the text encoder 'enc.safetensors': it has " + std::to_string(n) +
                  " pieces, the encoder's embedding only " + std::to_string(n - 1) + " rows") != std::string::npos,
           m.c_str());
  m = error(*tok_, n + 1000);
  QVERIFY2(m.find("pieces for an embedding of " + std::to_string(n + 1000) + " rows, 1000 more") != std::string::npos,
           m.c_str());
  m = error(*tok_, 256384);  // the real umT5 encoder with the demo tokenizer
  QVERIFY2(m.find("does not belong") != std::string::npos, m.c_str());
  const std::string doubt = check_umt5_tokenizer(*tok_, n + 100, "enc.safetensors", "tok.model");
  QVERIFY2(doubt.find("may not belong together") != std::string::npos, doubt.c_str());
  // A LLaMA-style SentencePiece (unk 0, bos 1, eos 2, no pad) of the same size: ids differ.
  const std::string other = path("llama_spm");
  train_sentencepiece("--input=" + path("corpus.txt") + " --model_prefix=" + other +
                      " --vocab_size=200 --model_type=unigram --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1"
                      " --hard_vocab_limit=false --minloglevel=2");
  const Umt5Tokenizer foreign = load_umt5_tokenizer(other + ".model");
  m = error(foreign, foreign.vocab_size());
  QVERIFY2(m.find("its piece '</s>' has id 2, umT5's is 1") != std::string::npos, m.c_str());
  // Weights without `spiece_model` carry no tokenizer.
  save_umt5_safetensors(*enc_, path("plain.safetensors"));
  QVERIFY(!load_umt5_embedded_tokenizer(path("plain.safetensors")).has_value());
  // A `spiece_model` that is not a SentencePiece model names the file and the tensor.
  NamedTensors junk = params_of(*enc_);
  junk.emplace_back("spiece_model", file_bytes(path("corpus.txt")));
  vidgraph::model_io::save_safetensors(path("junk_spm.safetensors"), junk);
  try {
    load_umt5_embedded_tokenizer(path("junk_spm.safetensors"));
    QFAIL("a broken spiece_model must throw");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("junk_spm.safetensors' tensor 'spiece_model") != std::string::npos, e.what());
  }
}

QTEST_GUILESS_MAIN(tst_TextEncoder)
#include "tst_text_encoder.moc"
