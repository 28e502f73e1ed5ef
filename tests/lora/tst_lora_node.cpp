// The Load LoRA node (app/nodes/model/load_lora.cpp) on a tiny seeded DiT: two chained nodes add
// up, the input model stays unchanged and shares the untouched tensors, a missing file is an error
// naming it.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include <map>

#include "engine/node_context.h"
#include "engine/registry.h"
#include "models/io/safetensors.h"
#include "models/wan/wan_tiny.h"
#include "nodes/model/model_handles.h"
#include "nodes/session.h"
#include "nodes/value_types.h"

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
  static at::Generator g = at::detail::createCPUGenerator(12);
  return g;
}
at::Tensor rnd(std::vector<int64_t> shape) { return at::randn(shape, gen()) * 0.1; }

bool close(const at::Tensor& a, const at::Tensor& b) { return at::allclose(a, b, 1e-5, 1e-6); }

}  // namespace

class tst_LoraNode : public QObject {
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

  // Two chained Load LoRA nodes: the second applies to the first's output; their changes add up.
  void chainedNodes() {
    c10::NoGradGuard no_grad;
    nodes::Session session;
    const engine::NodeType* type = session.registry().find("LoadLoRA");
    QVERIFY(type != nullptr);
    const at::Tensor d1 = rnd({2, 64}), u1 = rnd({64, 2}), d2 = rnd({3, 64}), u2 = rnd({64, 3});
    const std::string one = write("one.safetensors", {{"diffusion_model.blocks.0.cross_attn.o.lora_down.weight", d1},
                                                      {"diffusion_model.blocks.0.cross_attn.o.lora_up.weight", u1}});
    const std::string two = write("two.safetensors", {{"transformer.blocks.0.attn2.to_out.0.lora_A.weight", d2},
                                                      {"transformer.blocks.0.attn2.to_out.0.lora_B.weight", u2}});
    auto before = snapshot(*base_);
    std::vector<std::string> warnings;
    auto run = [&](const engine::Value& model, const std::string& file, double strength) {
      engine::NodeContext::Hooks hooks;
      hooks.log = [&](engine::LogLevel level, const std::string& line) {
        if (level == engine::LogLevel::Warn) warnings.push_back(line);
      };
      engine::NodeContext ctx("lora", "LoadLoRA", {{"model", model}},
                              type->params_with_defaults({{"path", file}, {"strength", strength}}), {}, hooks);
      auto out = type->compute(ctx);
      if (!out.ok()) qFatal("%s", out.error().message.c_str());
      return out->at("model");
    };
    nodes::DitHandle handle{base_.ptr(), "tiny", base_->device(), at::kFloat};
    const engine::Value in = engine::make_value(nodes::kModelType, std::move(handle), 0);
    const engine::Value out = run(run(in, one, 1.0), two, 2.0);
    const auto& dit = *engine::value_as<nodes::DitHandle>(out);
    const at::Tensor want = before["blocks.0.cross_attn.o.weight"] + u1.matmul(d1) + 2.0 * u2.matmul(d2);
    QVERIFY(close(params_of(*dit.model)["blocks.0.cross_attn.o.weight"], want));
    QVERIFY(at::equal(params_of(*base_)["blocks.0.cross_attn.o.weight"], before["blocks.0.cross_attn.o.weight"]));
    QVERIFY(params_of(*dit.model)["blocks.1.ffn.2.weight"].data_ptr() == params_of(*base_)["blocks.1.ffn.2.weight"].data_ptr());
    QVERIFY(warnings.empty());

    // An A14B expert: a file named for the other expert is applied, with a warning naming both.
    nodes::DitHandle low{base_.ptr(), "tiny", base_->device(), at::kFloat, nodes::WanExpert::LowNoise};
    const engine::Value low_in = engine::make_value(nodes::kModelType, std::move(low), 0);
    const std::string high_file = write("lightning_high_noise.safetensors",
                                        {{"diffusion_model.blocks.0.cross_attn.o.lora_down.weight", d1},
                                         {"diffusion_model.blocks.0.cross_attn.o.lora_up.weight", u1}});
    run(low_in, high_file, 1.0);
    QCOMPARE(warnings.size(), std::size_t(1));
    QVERIFY2(warnings[0].find("named for the high-noise expert but goes to the low-noise expert") != std::string::npos,
             warnings[0].c_str());
    const std::string low_file = write("lightning_low_noise.safetensors",
                                       {{"diffusion_model.blocks.0.cross_attn.o.lora_down.weight", d1},
                                        {"diffusion_model.blocks.0.cross_attn.o.lora_up.weight", u1}});
    run(low_in, low_file, 1.0);
    QCOMPARE(warnings.size(), std::size_t(1));

    engine::NodeContext bad("lora", "LoadLoRA", {{"model", in}},
                            type->params_with_defaults({{"path", path("missing.safetensors")}}), {}, {});
    const auto failed = type->compute(bad);
    QVERIFY(!failed.ok());
    QVERIFY2(failed.error().message.find("missing.safetensors") != std::string::npos, failed.error().message.c_str());
  }
};

QTEST_GUILESS_MAIN(tst_LoraNode)
#include "tst_lora_node.moc"
