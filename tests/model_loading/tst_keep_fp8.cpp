// A DiT loaded with keep_fp8 (models/wan/wan_checkpoint.h) from scaled-fp8 files in both formats and
// both scale namings: the quantised linears hold 1-byte codes, and every result equals the one of
// the same file dequantised at load, bit for bit: the weights looked up, the forward, the forward
// with block swap, a LoRA on a kept layer, the saved checkpoint. On a GPU, the bf16 forward of the
// kept model against the CPU reference.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <set>
#include <string>

#include "fp8_dit_file.h"
#include "models/io/fp8.h"
#include "models/wan/wan_lora.h"
#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::wan;

namespace {

struct Inputs {
  at::Tensor x, t, ctx;
};

Inputs inputs() {
  at::Generator gen = at::detail::createCPUGenerator(5);
  return {at::randn({1, 48, 1, 4, 4}, gen), at::full({1}, 300.0), at::randn({1, 3, 64}, gen)};
}

at::Tensor forward(WanModelImpl& m, const Inputs& in) { return m.forward(in.x, in.t, in.ctx, {}); }

int64_t bytes_of(WanModelImpl& m) {
  int64_t total = 0;
  for (const auto& [name, t] : wan_named_parameters(m)) total += t.numel() * int64_t(t.element_size());
  return total;
}

}  // namespace

class tst_KeepFp8 : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::string path(const std::string& name) const { return (dir_.path() + "/").toStdString() + name; }

 private Q_SLOTS:
  void sameResultsAsDequantisedAtLoad_data();
  void sameResultsAsDequantisedAtLoad();
  void noFp8InTheFile();
  void gpuForwardMatchesCpu();
};

void tst_KeepFp8::sameResultsAsDequantisedAtLoad_data() {
  QTest::addColumn<int>("format");
  QTest::addColumn<int>("naming");
  QTest::newRow("E4M3, scale_weight") << int(model_io::Fp8Format::E4M3FN) << int(model_io::Fp8ScaleNaming::ScaleWeight);
  QTest::newRow("E5M2, weight_scale") << int(model_io::Fp8Format::E5M2) << int(model_io::Fp8ScaleNaming::WeightScale);
}

void tst_KeepFp8::sameResultsAsDequantisedAtLoad() {
  QFETCH(int, format);
  QFETCH(int, naming);
  c10::NoGradGuard no_grad;
  const std::string base = path("fp8-" + std::to_string(format));
  WanModel src = wan_make_model(wan_tiny_config(), 21);
  const std::set<std::string> quantised = test::write_fp8_dit(*src, base, model_io::Fp8Format(format),
                                                              model_io::Fp8ScaleNaming(naming));
  const std::string file = base + ".safetensors";
  WanModel dequantised = wan_load_model(file, WanLoadOptions{});
  WanLoadOptions keep;
  keep.keep_fp8 = true;
  WanModel kept = wan_load_model(file, keep);

  // The quantised linears hold codes and a value table; everything else loads as without the option.
  const auto linears = wan_linears_by_weight(*kept);
  int64_t code_bytes = 0;
  for (const auto& [name, t] : wan_named_parameters(*kept)) {
    const bool fp8 = quantised.count(name) > 0;
    QCOMPARE(t.scalar_type(), fp8 ? at::kByte : at::kFloat);
    if (const auto it = linears.find(name); it != linears.end()) QCOMPARE(it->second->fp8_table.defined(), fp8);
    if (fp8) code_bytes += t.numel();
  }
  QCOMPARE(bytes_of(*dequantised) - bytes_of(*kept), 3 * code_bytes);  // fp32 here: 4 bytes -> 1

  // Looked up, every weight is the dequantised one exactly; so is the forward, and with block swap.
  const auto want = wan_named_parameters(*dequantised);
  const auto have = wan_named_weights(*kept);
  QCOMPARE(have.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) QVERIFY2(at::equal(have[i].second, want[i].second), want[i].first.c_str());
  const Inputs in = inputs();
  const at::Tensor reference = forward(*dequantised, in);
  QVERIFY(at::equal(forward(*kept, in), reference));
  keep.offload_blocks = 1;
  WanModel swapped = wan_load_model(file, keep);
  QVERIFY(at::equal(forward(*swapped, in), reference));

  // A LoRA on a kept layer makes a float copy of that layer only, with the dequantised model's result.
  const std::string lora_file = path("lora-" + std::to_string(format) + ".safetensors");
  at::Generator gen = at::detail::createCPUGenerator(9);
  model_io::save_safetensors(lora_file, {{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", at::randn({4, 64}, gen) * 0.1},
                                         {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", at::randn({64, 4}, gen) * 0.1}});
  const WanLora lora = wan_read_lora(lora_file);
  const WanLoraResult on_kept = wan_apply_lora(*kept, lora, 0.8);
  const WanLoraResult on_dequantised = wan_apply_lora(*dequantised, lora, 0.8);
  QCOMPARE(on_kept.private_bytes, size_t(64 * 64 * 4));
  QVERIFY(at::equal(forward(*on_kept.model, in), forward(*on_dequantised.model, in)));
  const auto patched = wan_linears_by_weight(*on_kept.model);
  QVERIFY(!patched.at("blocks.0.self_attn.q.weight")->fp8_table.defined());
  QCOMPARE(patched.at("blocks.0.self_attn.k.weight")->weight.data_ptr(), linears.at("blocks.0.self_attn.k.weight")->weight.data_ptr());

  // Saved, it writes the looked-up floats: the file loads as the dequantised model.
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  const std::string saved = path("saved-" + std::to_string(format) + ".safetensors");
  wan_save_checkpoint(*kept, saved, so);
  WanModel reloaded = wan_load_model(saved, WanLoadOptions{});
  QVERIFY(at::equal(forward(*reloaded, in), reference));
}

void tst_KeepFp8::noFp8InTheFile() {
  c10::NoGradGuard no_grad;
  WanModel src = wan_make_model(wan_tiny_config(), 22);
  WanSaveOptions so;
  so.layout = WanLayout::SingleFile;
  wan_save_checkpoint(*src, path("plain.safetensors"), so);
  WanLoadOptions keep;
  keep.keep_fp8 = true;
  WanModel m = wan_load_model(path("plain.safetensors"), keep);
  for (const auto& [name, t] : wan_named_parameters(*m)) QVERIFY2(t.scalar_type() == at::kFloat, name.c_str());
  const Inputs in = inputs();
  QVERIFY(at::equal(forward(*m, in), forward(*src, in)));
}

void tst_KeepFp8::gpuForwardMatchesCpu() {
  if (!at::hasCUDA()) QSKIP("No GPU: the kept-fp8 forward on the GPU was not run.");
  c10::NoGradGuard no_grad;
  const std::string base = path("fp8-gpu");
  WanModel src = wan_make_model(wan_tiny_config(), 23);
  test::write_fp8_dit(*src, base, model_io::Fp8Format::E4M3FN, model_io::Fp8ScaleNaming::ScaleWeight);
  WanModel cpu = wan_load_model(base + ".safetensors", WanLoadOptions{});
  WanLoadOptions o;
  o.device = c10::Device(c10::kCUDA, 0);
  o.compute_dtype = at::kBFloat16;
  o.keep_fp8 = true;
  WanModel kept = wan_load_model(base + ".safetensors", o);
  o.keep_fp8 = false;
  WanModel dequantised = wan_load_model(base + ".safetensors", o);
  const Inputs in = inputs();
  const Inputs gpu{in.x.cuda(), in.t.cuda(), in.ctx.cuda()};
  const at::Tensor got = forward(*kept, gpu);
  QVERIFY(at::equal(got, forward(*dequantised, gpu)));  // same bf16 weights, same kernels
  const at::Tensor want = forward(*cpu, in);
  const double rel = ((got.cpu() - want).norm() / want.norm()).item<double>();
  QVERIFY2(rel < 5e-2, qPrintable(QString("relative L2 %1").arg(rel)));
}

QTEST_GUILESS_MAIN(tst_KeepFp8)
#include "tst_keep_fp8.moc"
