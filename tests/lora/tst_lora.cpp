// LoRA files for the Wan DiT (models/wan/wan_lora.h) on a tiny seeded DiT
// with LoRA files written in each layout users have: ComfyUI / lightx2v (diffusion_model. +
// lora_down / lora_up / alpha / diff / diff_b), kohya (lora_unet_ underscores), diffusers / PEFT
// (transformer. + lora_A / lora_B, diffusers module names), and the trainer's sparse extras.
// Asserts W' = W + s·(α/r)·up·down per layer, that untouched parameters share storage with the
// input model and the input stays unchanged, unmatched keys reported, LoRAs of other models
// refused. tst_lora_node.cpp runs the Load LoRA node.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "error_of.h"
#include "models/io/safetensors.h"
#include "models/wan/wan_lora.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::wan;

namespace {

std::map<std::string, at::Tensor> params_of(WanModelImpl& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, t] : wan_named_parameters(m)) out[name] = t;
  return out;
}

std::map<std::string, at::Tensor> snapshot(WanModelImpl& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [name, t] : wan_named_parameters(m)) out[name] = t.clone();
  return out;
}

at::Generator& gen() {
  static at::Generator g = at::detail::createCPUGenerator(11);
  return g;
}
at::Tensor rnd(std::vector<int64_t> shape) { return at::randn(shape, gen()) * 0.1; }

bool close(const at::Tensor& a, const at::Tensor& b) { return at::allclose(a, b, 1e-5, 1e-6); }

}  // namespace

class tst_Lora : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  WanModel base_{nullptr};
  std::string path(const std::string& name) const { return (dir_.path() + "/").toStdString() + name; }
  std::string write(const std::string& name, const model_io::NamedTensors& tensors) const {
    model_io::save_safetensors(path(name), tensors);
    return path(name);
  }

 private Q_SLOTS:
  void initTestCase() { base_ = wan_make_model(wan_tiny_config(), 3); }

  // ComfyUI / lightx2v: lora_down / lora_up / alpha, diff and diff_b on a norm, diff on a modulation.
  void comfyLayout() {
    c10::NoGradGuard no_grad;
    const at::Tensor down = rnd({4, 64}), up = rnd({64, 4});
    const at::Tensor diff = rnd({64}), diff_b = rnd({64}), mod = rnd({1, 6, 64});
    const std::string file = write("comfy.safetensors", {
        {"diffusion_model.blocks.0.self_attn.q.lora_down.weight", down},
        {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", up},
        {"diffusion_model.blocks.0.self_attn.q.alpha", at::scalar_tensor(2.0)},
        {"diffusion_model.blocks.1.norm3.diff", diff},
        {"diffusion_model.blocks.1.norm3.diff_b", diff_b},
        {"diffusion_model.blocks.0.modulation.diff", mod},
    });
    auto before = snapshot(*base_);
    const WanLoraResult r = wan_apply_lora(*base_, wan_read_lora(file), 0.7);
    auto p = params_of(*r.model);
    QVERIFY(close(p["blocks.0.self_attn.q.weight"], before["blocks.0.self_attn.q.weight"] + 0.7 * 0.5 * up.matmul(down)));
    QVERIFY(close(p["blocks.1.norm3.weight"], before["blocks.1.norm3.weight"] + 0.7 * diff));
    QVERIFY(close(p["blocks.1.norm3.bias"], before["blocks.1.norm3.bias"] + 0.7 * diff_b));
    QVERIFY(close(p["blocks.0.modulation"], before["blocks.0.modulation"] + 0.7 * mod));
    QCOMPARE(r.layers_patched, int64_t(4));
    QVERIFY(r.unmatched.empty());
    // Untouched parameters are the input's tensors; the touched ones are new; the input is unchanged.
    const auto base = params_of(*base_);
    for (const auto& [name, t] : p) {
      const bool touched = name == "blocks.0.self_attn.q.weight" || name == "blocks.1.norm3.weight" ||
                           name == "blocks.1.norm3.bias" || name == "blocks.0.modulation";
      QVERIFY2((t.data_ptr() == base.at(name).data_ptr()) != touched, name.c_str());
      QVERIFY2(at::equal(base.at(name), before.at(name)), name.c_str());
    }
    QCOMPARE(r.private_bytes, size_t((64 * 64 + 64 + 64 + 6 * 64) * 4));
    // The patched model runs, and as a full copy with the patched weights would.
    WanModel copy = wan_make_model(wan_tiny_config(), 3);
    for (auto& [name, t] : wan_named_parameters(*copy)) t.copy_(p.at(name));
    const at::Tensor x = at::randn({1, 48, 1, 4, 4}, gen()), t = at::full({1}, 300.0), ctx = at::randn({1, 3, 64}, gen());
    QVERIFY(at::allclose(r.model->forward(x, t, ctx, {}), copy->forward(x, t, ctx, {}), 1e-5, 1e-5));
    QCOMPARE(r.model->device(), base_->device());
  }

  // kohya: lora_unet_ + underscores, no alpha (alpha = rank).
  void kohyaLayout() {
    c10::NoGradGuard no_grad;
    const at::Tensor down = rnd({8, 64}), up = rnd({64, 8});
    const std::string file = write("kohya.safetensors", {{"lora_unet_blocks_1_cross_attn_k.lora_down.weight", down},
                                                         {"lora_unet_blocks_1_cross_attn_k.lora_up.weight", up},
                                                         {"lora_unet_time_projection_1.lora_down.weight", rnd({2, 64})},
                                                         {"lora_unet_time_projection_1.lora_up.weight", rnd({384, 2})}});
    auto before = snapshot(*base_);
    const WanLoraResult r = wan_apply_lora(*base_, wan_read_lora(file), 1.0);
    QVERIFY(close(params_of(*r.model)["blocks.1.cross_attn.k.weight"],
                  before["blocks.1.cross_attn.k.weight"] + up.matmul(down)));
    QCOMPARE(r.layers_patched, int64_t(2));
  }

  // diffusers / PEFT: transformer. + lora_A / lora_B with diffusers module names.
  void diffusersLayout() {
    c10::NoGradGuard no_grad;
    const at::Tensor a = rnd({4, 64}), b = rnd({64, 4}), fa = rnd({4, 64}), fb = rnd({128, 4});
    const at::Tensor oa = rnd({2, 64}), ob = rnd({192, 2});
    const std::string file = write("peft.safetensors", {{"transformer.blocks.0.attn1.to_q.lora_A.weight", a},
                                                        {"transformer.blocks.0.attn1.to_q.lora_B.weight", b},
                                                        {"transformer.blocks.1.ffn.net.0.proj.lora_A.weight", fa},
                                                        {"transformer.blocks.1.ffn.net.0.proj.lora_B.weight", fb},
                                                        {"transformer.proj_out.lora_A.weight", oa},
                                                        {"transformer.proj_out.lora_B.weight", ob}});
    auto before = snapshot(*base_);
    const WanLoraResult r = wan_apply_lora(*base_, wan_read_lora(file), -1.5);
    auto p = params_of(*r.model);
    QVERIFY(close(p["blocks.0.self_attn.q.weight"], before["blocks.0.self_attn.q.weight"] - 1.5 * b.matmul(a)));
    QVERIFY(close(p["blocks.1.ffn.0.weight"], before["blocks.1.ffn.0.weight"] - 1.5 * fb.matmul(fa)));
    QVERIFY(close(p["head.head.weight"], before["head.head.weight"] - 1.5 * ob.matmul(oa)));
  }

  // Keys naming no layer are reported with a count and the first names; nothing matching is an error.
  void unmatchedKeys() {
    c10::NoGradGuard no_grad;
    const std::string file = write("partial.safetensors", {
        {"diffusion_model.blocks.0.self_attn.v.lora_down.weight", rnd({2, 64})},
        {"diffusion_model.blocks.0.self_attn.v.lora_up.weight", rnd({64, 2})},
        {"diffusion_model.blocks.0.self_attn.qkv.lora_down.weight", rnd({2, 64})},
        {"diffusion_model.blocks.0.self_attn.qkv.lora_up.weight", rnd({192, 2})},
        {"text_encoders.t5xxl.whatever", rnd({3})},
    });
    const WanLora lora = wan_read_lora(file);
    const WanLoraResult r = wan_apply_lora(*base_, lora, 1.0);
    QCOMPARE(r.unmatched.size(), size_t(2));
    const std::string sentence = wan_lora_unmatched_sentence(lora, r);
    QVERIFY2(sentence.find("2 of 3") != std::string::npos, sentence.c_str());
    QVERIFY2(sentence.find("self_attn.qkv.lora_") != std::string::npos, sentence.c_str());
    QVERIFY2(sentence.find("text_encoders.t5xxl.whatever") != std::string::npos, sentence.c_str());

    const std::string sdxl = write("sdxl.safetensors", {
        {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight", rnd({4, 320})},
        {"lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight", rnd({320, 4})},
    });
    const std::string message = error_of([&] { wan_apply_lora(*base_, wan_read_lora(sdxl), 1.0); });
    QVERIFY2(message.find("this LoRA is not for Wan2.2-TI2V-5B") != std::string::npos, message.c_str());
    QVERIFY2(message.find("lora_unet_down_blocks_0_attentions_0_proj_in") != std::string::npos, message.c_str());
  }

  // A LoRA of a model with another width (the 14B's 5120 against our 64) is refused, naming the layer.
  void otherModelRefused() {
    const std::string file = write("wide.safetensors", {
        {"diffusion_model.blocks.0.self_attn.k.lora_down.weight", rnd({4, 80})},
        {"diffusion_model.blocks.0.self_attn.k.lora_up.weight", rnd({80, 4})},
    });
    auto before = snapshot(*base_);
    const std::string message = error_of([&] { wan_apply_lora(*base_, wan_read_lora(file), 1.0); });
    QVERIFY2(message.find("does not fit this model: layer 'blocks.0.self_attn.k'") != std::string::npos, message.c_str());
    QVERIFY2(message.find("[80, 4]") != std::string::npos && message.find("[64, 64]") != std::string::npos,
             message.c_str());
    QVERIFY2(message.find("LoRA for another model") != std::string::npos, message.c_str());
    for (const auto& [name, t] : params_of(*base_)) QVERIFY(at::equal(t, before[name]));
    const std::string half = write("half.safetensors", {{"diffusion_model.blocks.0.self_attn.k.lora_up.weight", rnd({64, 4})}});
    QVERIFY(error_of([&] { wan_apply_lora(*base_, wan_read_lora(half), 1.0); }).find("lora_up but no lora_down") !=
            std::string::npos);
  }

  // Non-finite values and rank 0 are named at load, file and tensor, before anything is applied.
  void damagedTensorsRefusedAtLoad_data() {
    QTest::addColumn<QString>("bad");     // the tensor's key suffix
    QTest::addColumn<QString>("reason");  // what the message says
    QTest::newRow("NaN in lora_up") << "lora_up.weight" << "NaN or infinite";
    QTest::newRow("infinite alpha") << "alpha" << "NaN or infinite";
    QTest::newRow("NaN in diff_b") << "diff_b" << "NaN or infinite";
    QTest::newRow("rank 0") << "rank0" << "rank 1 or more";
  }
  void damagedTensorsRefusedAtLoad() {
    QFETCH(QString, bad);
    QFETCH(QString, reason);
    const std::string key = "diffusion_model.blocks.0.self_attn.k.";
    at::Tensor down = rnd({4, 64}), up = rnd({64, 4}), alpha = at::full({}, 4.0), diff_b = rnd({64});
    if (bad == "lora_up.weight") up[3][1] = std::nan("");
    if (bad == "alpha") alpha.fill_(std::numeric_limits<float>::infinity());
    if (bad == "diff_b") diff_b[7] = std::nan("");
    if (bad == "rank0") down = at::zeros({0, 64}), up = at::zeros({64, 0});
    const std::string file = write("damaged.safetensors", {{key + "lora_down.weight", down},
                                                           {key + "lora_up.weight", up},
                                                           {key + "alpha", alpha},
                                                           {key + "diff_b", diff_b}});
    const std::string message = error_of([&] { (void)wan_read_lora(file); });
    const std::string named = bad == "rank0" ? "lora_down.weight" : bad.toStdString();
    QVERIFY2(message.find(file) != std::string::npos && message.find(key + named) != std::string::npos &&
                 message.find(reason.toStdString()) != std::string::npos,
             message.c_str());
  }

  // The trainer's files: ComfyUI LoRA keys plus plain sparse extras, which the model gains.
  void trainedExtras() {
    c10::NoGradGuard no_grad;
    const at::Tensor gate = rnd({64, 64}), gate_b = rnd({64}), proj = rnd({32, 32});
    const std::string file = write("trained.safetensors", {
        {"diffusion_model.blocks.1.self_attn.q.lora_down.weight", rnd({2, 64})},
        {"diffusion_model.blocks.1.self_attn.q.lora_up.weight", rnd({64, 2})},
        {"diffusion_model.blocks.1.self_attn.q.alpha", at::scalar_tensor(2.0)},
        {"diffusion_model.blocks.1.self_attn.to_gate_compress.weight", gate},
        {"diffusion_model.blocks.1.self_attn.to_gate_compress.bias", gate_b},
        {"diffusion_model.blocks.0.self_attn.proj_l.weight", proj},
    });
    const WanLoraResult r = wan_apply_lora(*base_, wan_read_lora(file), 0.5);
    QVERIFY(r.model->config().with_gate_compress);
    QVERIFY(r.model->config().with_proj_l);
    QVERIFY(!base_->config().with_gate_compress);
    auto p = params_of(*r.model);
    QVERIFY(at::equal(p["blocks.1.self_attn.to_gate_compress.weight"], gate));  // as trained: not scaled
    QVERIFY(at::equal(p["blocks.1.self_attn.to_gate_compress.bias"], gate_b));
    QVERIFY(at::equal(p["blocks.0.self_attn.proj_l.weight"], proj));
    QVERIFY(p["blocks.0.self_attn.to_gate_compress.weight"].abs().max().item<float>() == 0.0f);
    QVERIFY(p["blocks.1.self_attn.proj_l.bias"].abs().max().item<float>() == 0.0f);
    QCOMPARE(params_of(*base_).count("blocks.0.self_attn.to_gate_compress.weight"), size_t(0));
  }

};

QTEST_GUILESS_MAIN(tst_Lora)
#include "tst_lora.moc"
