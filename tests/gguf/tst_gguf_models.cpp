// Models from GGUF files laid out as the published ones: a tiny Wan DiT as QuantStack's
// Wan2.2-TI2V-5B-GGUF (ComfyUI-GGUF's converter: official names, general.architecture = wan,
// Q8_0 matrices, F16, F32 vectors / small tensors / modulation, the 5-D patch embedding restored,
// a tensor stored reshaped with comfy.gguf.orig_shape) gives the fp32 model's output within the
// Q8_0 tolerance; a tiny umT5 encoder as city96's umt5-xxl-encoder GGUF (llama.cpp names) maps and
// loads; GGUFs of other models are refused by name.
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

#include <functional>

#include "error_of.h"
#include "gguf_test_writer.h"
#include "model_io_pth_writer.h"
#include "models/io/safetensors.h"
#include "models/t5/umt5_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::test;

namespace {

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
    GgufTestWriter w;
    w.string_kv("general.architecture", "t5encoder");
    w.string_kv("tokenizer.ggml.model", "t5");
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
    // The GGUF carries its tokenizer as metadata only: no spiece_model tensor to use.
    QVERIFY(!t5::load_umt5_embedded_tokenizer(file).has_value());

    GgufTestWriter other;
    other.string_kv("general.architecture", "llama");
    add_torch_tensor(other, "token_embd.weight", at::randn({4, 32}), kTF32);
    write_file(path("llama.gguf"), other.bytes());
    const std::string message = error_of([&] { t5::load_umt5(path("llama.gguf")); });
    QVERIFY2(message.find("is a GGUF of a 'llama' model") != std::string::npos, message.c_str());
  }
};

QTEST_GUILESS_MAIN(tst_GgufModels)
#include "tst_gguf_models.moc"
