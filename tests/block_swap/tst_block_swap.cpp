// Block swap of the Wan DiT (models/wan/wan_block_swap.h): a model whose last N blocks live in host
// memory and stream to the device per forward gives the resident model's result, leaves its host
// weights where they were (also when a block throws), refuses training, and on a GPU holds fewer
// weights on the device at its peak.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/tensor.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/device/device_memory.h"
#include "models/wan/wan_block_swap.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_model.h"
#include "models/wan/wan_tiny.h"
#include "tests/common/error_of.h"

#include <QtTest/QtTest>

using namespace vidgraph;
using namespace vidgraph::wan;

namespace {

at::Tensor randn_seeded(at::IntArrayRef shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(at::kFloat));
}

double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  return (ad - bd).norm().item<double>() / std::max(bd.norm().item<double>(), 1e-30);
}

WanConfig three_block_config() {
  WanConfig c = wan_tiny_config();
  c.num_layers = 3;
  c.in_dim = 4;
  c.out_dim = 4;
  c.text_len = 8;
  c.text_dim = 16;
  return c;
}

// Refuses every call: a run through it throws inside block 0's self-attention, after the block's
// weights were swapped in (the path under test), without a real plugin.
class RefusingBackend : public plugin::AttentionBackend {
 public:
  std::vector<plugin::MethodInfo> methods() const override { return {}; }
  plugin::PrepareResult prepare(const plugin::PrepareRequest&) override { return {nullptr, "refused"}; }
  at::Tensor forward(const plugin::AttentionCall&) override { throw std::runtime_error("refused"); }
  plugin::AttentionResult forward_with_stats(const plugin::AttentionCall&) override {
    throw std::runtime_error("refused");
  }
  void shutdown() override {}
};

struct Inputs {
  at::Tensor x = randn_seeded({1, 4, 2, 8, 8}, 1);
  at::Tensor t = at::tensor({0.0f, 700.0f}).view({1, 2});
  at::Tensor context = randn_seeded({1, 5, 16}, 2);
};

at::Tensor forward(WanModelImpl& m, const Inputs& in, const AttentionRun& run = {}) {
  const c10::Device d = m.device();
  return m.forward(in.x.to(d), in.t.to(d), in.context.to(d), run).cpu();
}

// Where each offloaded parameter's data lives, to check it is left exactly there.
std::vector<const void*> block_data(WanModelImpl& m, size_t first) {
  std::vector<const void*> out;
  for (size_t i = first; i < m.blocks->size(); ++i) {
    for (const at::Tensor& p : m.blocks->ptr(i)->parameters()) out.push_back(p.data_ptr());
  }
  return out;
}

bool block_on(WanModelImpl& m, size_t i, c10::DeviceType type) {
  for (const at::Tensor& p : m.blocks->ptr(i)->parameters()) {
    if (p.device().type() != type) return false;
  }
  return true;
}

}  // namespace

class tst_block_swap : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { c10::GradMode::set_enabled(false); }
  void offloadedEqualsResident_data();
  void offloadedEqualsResident();
  void loadOffloaded();
  void throwingBlockRestoresWeights();
  void refusesTraining();
  void gpuOffloadedEqualsResident();
  void gpuSwapInsideInferenceMode();
  void expertsTradePlaces();
  void gpuExpertsTradePlaces();
};

void tst_block_swap::offloadedEqualsResident_data() {
  QTest::addColumn<int>("offload");
  QTest::newRow("last block") << 1;
  QTest::newRow("two of three") << 2;
  QTest::newRow("every block") << 3;
}

void tst_block_swap::offloadedEqualsResident() {
  QFETCH(int, offload);
  const Inputs in;
  WanModel resident = wan_make_model(three_block_config(), 7);
  WanModelOptions o;
  o.config = three_block_config();
  o.offload_blocks = offload;
  WanModel swapped(o);
  wan_init_weights(*swapped, 7);
  const size_t first = 3 - offload;
  const std::vector<const void*> before = block_data(*swapped, first);
  const at::Tensor want = forward(*resident, in);
  for (int pass = 0; pass < 2; ++pass) {  // the second pass swaps the restored weights again
    QVERIFY(at::equal(forward(*swapped, in), want));
  }
  QCOMPARE(block_data(*swapped, first), before);
}

void tst_block_swap::loadOffloaded() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("dit").toStdString();
  wan_save_tiny(path, three_block_config(), 11, WanSaveOptions{});
  const Inputs in;
  const at::Tensor want = forward(*wan_load_model(path, WanLoadOptions{}), in);
  WanLoadOptions lo;
  lo.offload_blocks = 2;
  WanModel m = wan_load_model(path, lo);
  QCOMPARE(m->options.offload_blocks, int64_t{2});
  QVERIFY(at::equal(forward(*m, in), want));
  lo.offload_blocks = 4;
  const std::string e = error_of([&] { wan_load_model(path, lo); });
  QVERIFY2(e.find("it has 3 blocks; choose 0 to 3") != std::string::npos, e.c_str());
  QVERIFY2(error_of([&] { wan_set_offload_blocks(*m, -1); }).find("choose 0 to 3") != std::string::npos,
           "wan_set_offload_blocks accepted -1");
  wan_set_offload_blocks(*m, 0);
  QVERIFY(at::equal(forward(*m, in), want));
}

void tst_block_swap::throwingBlockRestoresWeights() {
  WanModel m = wan_make_model(three_block_config(), 3);
  wan_set_offload_blocks(*m, 3);
  const std::vector<const void*> before = block_data(*m, 0);
  RefusingBackend refusing;
  AttentionRun run;
  run.backend = &refusing;  // no preparation: block 0 throws once its weights are swapped in
  const std::string e = error_of([&] { forward(*m, Inputs{}, run); });
  QVERIFY2(e.find("needs a preparation") != std::string::npos, e.c_str());
  QCOMPARE(block_data(*m, 0), before);
  QVERIFY(at::equal(forward(*m, Inputs{}), forward(*wan_make_model(three_block_config(), 3), Inputs{})));
}

void tst_block_swap::refusesTraining() {
  WanModel m = wan_make_model(three_block_config(), 5);
  wan_set_offload_blocks(*m, 1);
  for (at::Tensor& p : m->parameters()) p.set_requires_grad(true);
  c10::AutoGradMode grad(true);
  const std::string e = error_of([&] { forward(*m, Inputs{}); });
  QVERIFY2(e.find("block swap (offload_blocks) is for sampling") != std::string::npos, e.c_str());
}

void tst_block_swap::gpuOffloadedEqualsResident() {
  if (!at::hasCUDA()) {
    QSKIP("No GPU: the streamed GPU forward was not run (the CPU cases cover the swap itself).");
  }
  // Blocks large enough that their weights dominate the peak: 6 blocks of dim 512, 8 x 8 x 8 tokens.
  WanConfig c = three_block_config();
  c.num_layers = 6;
  c.dim = 512;
  c.ffn_dim = 2048;
  c.num_heads = 8;
  const Inputs in{randn_seeded({1, 4, 8, 16, 16}, 1), at::full({1, 8}, 600.0f), randn_seeded({1, 5, 16}, 2)};
  const at::Tensor want = forward(*wan_make_model(c, 9), in);
  WanModelOptions o;
  o.config = c;
  o.device = c10::Device(c10::kCUDA, 0);
  o.compute_dtype = at::kBFloat16;
  WanModel gpu(o);
  wan_init_weights(*gpu, 9);
  const c10::Device d = o.device;
  device::reset_peak_device_memory(d);
  const at::Tensor resident = forward(*gpu, in);
  const int64_t resident_peak = device::device_memory_stats(d).peak_bytes;
  wan_set_offload_blocks(*gpu, 5);
  QVERIFY(block_on(*gpu, 0, c10::kCUDA) && block_on(*gpu, 5, c10::kCPU));
  QVERIFY(gpu->blocks->ptr(5)->parameters().front().is_pinned());
  device::reset_peak_device_memory(d);
  for (int pass = 0; pass < 3; ++pass) {
    const at::Tensor streamed = forward(*gpu, in);
    QVERIFY2(at::equal(streamed, resident), qPrintable(QString("pass %1: rel-L2 %2 against the resident GPU model")
                                                           .arg(pass).arg(rel_err(streamed, resident))));
  }
  const int64_t swapped_peak = device::device_memory_stats(d).peak_bytes;
  QVERIFY2(rel_err(resident, want) < 5e-2, qPrintable(QString::number(rel_err(resident, want))));
  QVERIFY(block_on(*gpu, 5, c10::kCPU));
  const device::DeviceMemoryStats stats = device::device_memory_stats(d);
  if (stats.available) {
    // 3 of 6 blocks at most on the device at once (1 resident + 2 streamed), about 7 MB each.
    QVERIFY2(swapped_peak + 15'000'000 < resident_peak,
             qPrintable(QString("peak %1 B streamed vs %2 B resident").arg(swapped_peak).arg(resident_peak)));
  }
}

// What Wan Sampler's expert swap does between two steps (nodes/sampling/expert_swap.h): inside the
// sampler's inference mode, leave it, move every block to the host and back. The weights stay
// ordinary parameters on their devices and the forward is the resident one, bit for bit.
void tst_block_swap::gpuSwapInsideInferenceMode() {
  if (!at::hasCUDA()) {
    QSKIP("No GPU: the swap between devices was not run (the CPU sampler test covers its order).");
  }
  WanModelOptions o;
  o.config = three_block_config();
  o.device = c10::Device(c10::kCUDA, 0);
  o.compute_dtype = at::kBFloat16;
  WanModel gpu(o);
  wan_init_weights(*gpu, 9);
  const Inputs in;
  c10::InferenceMode sampling;
  const at::Tensor resident = forward(*gpu, in);
  for (const int64_t blocks : {int64_t(3), int64_t(0)}) {
    c10::InferenceMode ordinary(false);
    wan_set_offload_blocks(*gpu, blocks);
  }
  QVERIFY(block_on(*gpu, 2, c10::kCUDA));
  for (const at::Tensor& p : gpu->parameters()) QVERIFY(!p.is_inference());
  QVERIFY(at::equal(forward(*gpu, in), resident));
  const double err = rel_err(resident, forward(*wan_make_model(o.config, 9), in));  // the CPU reference
  QVERIFY2(err < 5e-2, qPrintable(QString::number(err)));
}

// On the CPU nothing moves, but the counts follow the trade and mismatched experts are refused.
void tst_block_swap::expertsTradePlaces() {
  const Inputs in;
  WanModel high = wan_make_model(three_block_config(), 3), low = wan_make_model(three_block_config(), 4);
  const at::Tensor high_out = forward(*high, in), low_out = forward(*low, in);
  wan_trade_places(*high, *low, 1);
  QCOMPARE(low->options.offload_blocks, int64_t{1});
  QCOMPARE(high->options.offload_blocks, int64_t{3});
  QVERIFY(at::equal(forward(*high, in), high_out) && at::equal(forward(*low, in), low_out));
  const std::string count = error_of([&] { wan_trade_places(*low, *high, 4); });
  QVERIFY2(count.find("choose 0 to 3") != std::string::npos, count.c_str());
  WanConfig two = three_block_config();
  two.num_layers = 2;
  WanModel other = wan_make_model(two, 5);
  const std::string mismatch = error_of([&] { wan_trade_places(*other, *low, 0); });
  QVERIFY2(mismatch.find("as many blocks on one device (2 and 3)") != std::string::npos, mismatch.c_str());
}

// The experts of experts_on_gpu "active": the arriving one ends on the device (its last block
// offloaded), the leaving one in page-locked host memory; both still compute what they did.
void tst_block_swap::gpuExpertsTradePlaces() {
  if (!at::hasCUDA()) QSKIP("No GPU: the trade between devices was not run (expertsTradePlaces covers the counts).");
  WanModelOptions o;
  o.config = three_block_config();
  o.device = c10::Device(c10::kCUDA, 0);
  o.compute_dtype = at::kBFloat16;
  WanModel high(o), low(o);
  wan_init_weights(*high, 3);
  wan_init_weights(*low, 4);
  wan_set_offload_blocks(*low, 3);  // waits on the host, as Load Wan Model leaves it
  const Inputs in;
  const at::Tensor high_out = forward(*high, in), low_out = forward(*low, in);
  wan_trade_places(*high, *low, 1);
  QVERIFY(block_on(*low, 0, c10::kCUDA) && block_on(*low, 1, c10::kCUDA) && block_on(*low, 2, c10::kCPU));
  for (size_t i = 0; i < 3; ++i) {
    QVERIFY(block_on(*high, i, c10::kCPU));
    for (const at::Tensor& p : high->blocks->ptr(i)->parameters()) QVERIFY(p.is_pinned());
  }
  QVERIFY(at::equal(forward(*low, in), low_out));
  QVERIFY(at::equal(forward(*high, in), high_out));
  wan_trade_places(*low, *high, 0);
  QVERIFY(block_on(*high, 2, c10::kCUDA) && block_on(*low, 0, c10::kCPU));
  QVERIFY(at::equal(forward(*high, in), high_out));
  // The GPU results match the CPU reference.
  const double err = rel_err(high_out, forward(*wan_make_model(o.config, 3), in));
  QVERIFY2(err < 5e-2, qPrintable(QString::number(err)));
}

QTEST_GUILESS_MAIN(tst_block_swap)
#include "tst_block_swap.moc"
