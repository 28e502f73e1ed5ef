// Tests of the Wan2.2 VAE (models/vae): topology against the official parameter counts, patchify
// channel order, chunked (cached) encode/decode equal to the whole-sequence computation, tiled decode
// within tolerance, progress and cancellation, latent normalisation, key mapping of every layout,
// and loading each layout (official .pth / safetensors, diffusers folder, prefixed repack); the
// residual block on fused kernels (plugins/api/vae_kernels.h) against its ATen ops; on a GPU, the
// channels-last fp32 and bf16 decode and the plugin's fused kernels against the CPU reference.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/silu.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "models/io/safetensors.h"
#include "models/vae/vae_blocks.h"
#include "models/vae/vae_checkpoint.h"
#include "models/vae/vae_tiling.h"
#include "models/vae/wan_vae.h"
#include "model_io_pth_writer.h"
#include "plugins/api/plugin_loader.h"

#include <QtCore/QDir>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

using namespace vidgraph::vae;
using vidgraph::model_io::NamedTensors;

namespace {

at::Tensor seeded(std::vector<int64_t> sizes, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor seeded_video(std::vector<int64_t> sizes, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::rand(sizes, gen, at::TensorOptions().dtype(at::kFloat)) * 2.0 - 1.0;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

double rel_l2(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.cpu().to(at::kFloat), w = want.cpu().to(at::kFloat);
  return ((g - w).norm() / w.norm()).item<double>();
}

// The VaeKernels contract in ATen ops (fp32 maths), counting its calls: the reference of the
// plugin's kernels and, on the CPU, a stand-in that shows where the residual block calls them.
class AtenVaeKernels : public vidgraph::plugin::VaeKernels {
 public:
  bool supports(c10::Device device, at::ScalarType dtype) const override {
    return device.is_cpu() && dtype == at::kFloat;
  }
  at::Tensor rms_norm_silu(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma,
                           bool silu) override {
    ++norms;
    std::vector<int64_t> shape(size_t(x.dim()), 1);
    shape[1] = x.size(1);
    at::Tensor v = x.to(at::kFloat);
    if (bias.defined()) v = v + bias.to(at::kFloat).reshape(shape);
    at::Tensor y = v / v.norm(2, {1}, true).clamp_min(1e-12) * std::sqrt(double(x.size(1))) *
                   gamma.to(at::kFloat).reshape(shape);
    return (silu ? at::silu(y) : y).to(x.scalar_type());
  }
  at::Tensor bias_residual(const at::Tensor& y, const at::Tensor& bias, const at::Tensor& h) override {
    ++residuals;
    std::vector<int64_t> shape(size_t(y.dim()), 1);
    shape[1] = y.size(1);
    at::Tensor sum = y.to(at::kFloat) + h.to(at::kFloat);
    if (bias.defined()) sum = sum + bias.to(at::kFloat).reshape(shape);
    return y.copy_(sum);
  }
  int norms = 0, residuals = 0;
};

// Every parameter of `m` drawn from N(0, 1) (gammas around 1, biases large enough to matter).
void seed_parameters(torch::nn::Module& m, uint64_t seed) {
  for (auto& p : m.named_parameters(true)) {
    const bool gamma = p.key().find("gamma") != std::string::npos;
    const at::Tensor v = seeded(p.value().sizes().vec(), seed++) * (gamma ? 0.2 : 0.3);
    p.value().detach().copy_(gamma ? v + 1.0 : v);
  }
}

NamedTensors params_of(const WanVae& vae) {
  NamedTensors out;
  for (const auto& item : vae.named_parameters(true)) {
    out.emplace_back(item.key(), item.value().detach().clone());
  }
  return out;
}

}  // namespace

class tst_Vae : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void officialTopology();
  void patchifyChannelOrder();
  void chunkedDecodeEqualsWhole();
  void chunkedEncodeEqualsWhole();
  void tileStarts();
  void tiledDecodeWithinTolerance();
  void sharedTiledDecode();
  void decodeMemoryEstimate();
  void progressAndCancel();
  void latentNormalisation();
  void badInputs();
  void gpuDecodeMatchesCpu();
  void fusedResidualBlockMatchesAten_data();
  void fusedResidualBlockMatchesAten();
  void gpuFusedKernels_data();
  void gpuFusedKernels();
  void keyMapping_data();
  void keyMapping();
  void keyMappingRoundTripsEveryKey();
  void loadLayouts_data();
  void loadLayouts();
  void badCheckpoints();

 private:
  std::shared_ptr<WanVae> tiny_;
  QTemporaryDir dir_;
  std::string path(const QString& name) const { return dir_.filePath(name).toStdString(); }
};

void tst_Vae::initTestCase() {
  tiny_ = make_seeded_vae(WanVaeConfig::tiny(), 1234);
  QVERIFY(dir_.isValid());
}

void tst_Vae::officialTopology() {
  // Parameter counts of the official module tree (reference/wan22.md section 6); weights stay
  // uninitialised (never touched), so this costs no real memory.
  const WanVae vae(WanVaeConfig::wan22());
  int64_t total = 0, encoder = 0, decoder = 0;
  size_t convs = 0;
  for (const auto& item : vae.named_parameters(true)) {
    total += item.value().numel();
    if (item.key().rfind("encoder.", 0) == 0) {
      encoder += item.value().numel();
    } else if (item.key().rfind("decoder.", 0) == 0) {
      decoder += item.value().numel();
    }
    convs += item.value().dim() == 5 ? 1 : 0;
  }
  QCOMPARE(total, int64_t(704688668));
  QCOMPARE(encoder, int64_t(149627776));
  QCOMPARE(decoder, int64_t(555049228));
  QCOMPARE(convs, size_t(26 + 34 + 2));  // CausalConv3d modules: encoder 26, decoder 34, conv1, conv2
  const auto params = vae.named_parameters(true);
  QVERIFY(params.find("encoder.downsamples.1.downsamples.2.time_conv.weight") != nullptr);
  QVERIFY(params.find("decoder.upsamples.0.upsamples.3.resample.1.weight") != nullptr);
  QVERIFY(params.find("decoder.upsamples.2.upsamples.3.time_conv.weight") == nullptr);  // up2d stage
  QVERIFY(params.find("encoder.middle.1.to_qkv.weight") != nullptr);
  QCOMPARE(params["decoder.head.0.gamma"].sizes().vec(), (std::vector<int64_t>{256, 1, 1, 1}));
  QCOMPARE(params["decoder.middle.1.norm.gamma"].sizes().vec(), (std::vector<int64_t>{1024, 1, 1}));
  QCOMPARE(WanVaeConfig::wan22().spatial_factor(), int64_t(16));
  QCOMPARE(WanVaeConfig::wan22().temporal_factor(), int64_t(4));
}

void tst_Vae::patchifyChannelOrder() {
  const at::Tensor x = at::arange(2 * 3 * 2 * 4 * 6, at::kFloat).view({2, 3, 2, 4, 6});
  const at::Tensor p = patchify(x, 2);
  QCOMPARE(p.sizes().vec(), (std::vector<int64_t>{2, 12, 2, 2, 3}));
  // channel = c*4 + r*2 + q with r the w offset and q the h offset
  for (int c : {0, 2}) {
    for (int q : {0, 1}) {
      for (int r : {0, 1}) {
        QCOMPARE(p[1][c * 4 + r * 2 + q][1][1][2].item<float>(), x[1][c][1][2 + q][4 + r].item<float>());
      }
    }
  }
  QVERIFY(at::equal(unpatchify(p, 2), x));
}

void tst_Vae::chunkedDecodeEqualsWhole() {
  const at::Tensor z = seeded({1, 8, 4, 3, 5}, 7);
  const at::Tensor chunked = tiny_->decode(z);
  const at::Tensor whole = tiny_->decode_whole(z);
  QCOMPARE(chunked.sizes().vec(), (std::vector<int64_t>{1, 3, 13, 48, 80}));
  QCOMPARE(chunked.scalar_type(), at::kFloat);
  QVERIFY(chunked.abs().max().item<double>() <= 1.0);
  QVERIFY2(chunked.std().item<double>() > 1e-3, "the decoded video is not constant");
  QVERIFY2(max_abs_diff(chunked, whole) < 1e-5, std::to_string(max_abs_diff(chunked, whole)).c_str());
  // Causality: changing the last latent frame leaves the frames decoded before it untouched.
  at::Tensor z2 = z.clone();
  z2.select(2, 3).add_(1.0);
  const at::Tensor other = tiny_->decode(z2);
  QVERIFY(at::equal(other.slice(2, 0, 9), chunked.slice(2, 0, 9)));
  QVERIFY(max_abs_diff(other.slice(2, 9), chunked.slice(2, 9)) > 1e-3);
}

void tst_Vae::chunkedEncodeEqualsWhole() {
  const at::Tensor video = seeded_video({1, 3, 9, 32, 48}, 11);
  const at::Tensor chunked = tiny_->encode(video);
  const at::Tensor whole = tiny_->encode_whole(video);
  QCOMPARE(chunked.sizes().vec(), (std::vector<int64_t>{1, 8, 3, 2, 3}));
  QVERIFY2(max_abs_diff(chunked, whole) < 1e-5, std::to_string(max_abs_diff(chunked, whole)).c_str());
  // The image path: one frame gives one latent frame, equal to the first latent of the video.
  const at::Tensor image = tiny_->encode(video.slice(2, 0, 1));
  QCOMPARE(image.sizes().vec(), (std::vector<int64_t>{1, 8, 1, 2, 3}));
  QVERIFY(max_abs_diff(image, chunked.slice(2, 0, 1)) < 1e-5);
}

void tst_Vae::tileStarts() {
  QCOMPARE(tile_starts(10, 16, 4), (std::vector<int64_t>{0}));
  QCOMPARE(tile_starts(10, 6, 2), (std::vector<int64_t>{0, 4}));
  QCOMPARE(tile_starts(44, 16, 4), (std::vector<int64_t>{0, 12, 24, 28}));
}

// Scales the off-centre spatial taps of every 3x3 kernel by `keep` and zeroes the middle attention's
// output: the decoder's spatial receptive field shrinks to (about) one latent cell.
std::shared_ptr<WanVae> localized_vae(double keep) {
  auto vae = make_seeded_vae(WanVaeConfig::tiny(), 1234);
  c10::NoGradGuard no_grad;
  for (auto& item : vae->named_parameters(true)) {
    at::Tensor w = item.value();
    if (item.key() == "decoder.middle.1.proj.weight") {
      w.zero_();
    } else if (w.dim() >= 4 && w.size(-1) == 3 && w.size(-2) == 3) {
      const at::Tensor centre = w.narrow(-2, 1, 1).narrow(-1, 1, 1).clone();
      w.mul_(keep);
      w.narrow(-2, 1, 1).narrow(-1, 1, 1).copy_(centre);
    }
  }
  return vae;
}

void tst_Vae::tiledDecodeWithinTolerance() {
  // Random weights see ~16 latent cells around each pixel (and the middle attention the whole
  // frame), so no tiling can match them; trained weights are far more local. These checks use
  // decoders made local on purpose: exact placement and blending first, then a small leak.
  const at::Tensor z = seeded({1, 8, 2, 12, 14}, 5) * 0.5;
  VaeDecodeOptions options;
  options.tiling = VaeTiling{8, 8, 4};
  int64_t calls = 0, last_total = 0;
  VaeCallbacks cb;
  cb.progress = [&](int64_t done, int64_t total) {
    ++calls;
    last_total = total;
    QCOMPARE(done, calls);
  };
  auto pointwise = localized_vae(0.0);
  const at::Tensor full = pointwise->decode(z);
  const at::Tensor tiled = pointwise->decode(z, cb, options);
  QCOMPARE(tiled.sizes().vec(), full.sizes().vec());
  QCOMPARE(last_total, int64_t(2 * 3 * 2));  // 2x3 tiles (rows 0,4; columns 0,4,6) x 2 latent frames
  QCOMPARE(calls, last_total);
  QVERIFY2(max_abs_diff(tiled, full) < 1e-5, std::to_string(max_abs_diff(tiled, full)).c_str());

  auto leaky = localized_vae(0.03);
  const at::Tensor z1 = z.slice(2, 0, 1);
  const at::Tensor full2 = leaky->decode(z1);
  const at::Tensor tiled2 = leaky->decode(z1, {}, options);
  const double mean_err = (tiled2 - full2).abs().mean().item<double>();
  const double spread = full2.std().item<double>();
  qInfo("local-ish decoder, tiled vs full: mean |err| %.5f, max |err| %.5f, signal std %.4f", mean_err,
        max_abs_diff(tiled2, full2), spread);
  QVERIFY(mean_err > 0.0);
  QVERIFY2(mean_err < 0.01 * spread, "tiled decode departs from the full decode");
  // A tile as large as the latent is the untiled path, exactly.
  options.tiling = VaeTiling{12, 14, 2};
  QVERIFY(at::equal(leaky->decode(z1, {}, options), full2));
}

// Two decoders share a tiled decode (as two ranks do): decoder 1 decodes tiles 1, 3, 5 and keeps no
// video, decoder 0 decodes tiles 0, 2, 4 and blends all six; the video equals one decoder's
// tiled decode exactly, and each decoder's progress counts its own three tiles' chunks.
void tst_Vae::sharedTiledDecode() {
  const at::Tensor z = seeded({1, 8, 2, 12, 14}, 5) * 0.5;
  auto vae = localized_vae(0.03);
  VaeDecodeOptions alone;
  alone.tiling = VaeTiling{8, 8, 4};  // 2 x 3 tiles
  const at::Tensor want = vae->decode(z, {}, alone);
  std::vector<at::Tensor> from_1;  // decoder 1's tile of each round
  std::vector<int64_t> totals;
  VaeCallbacks cb;
  cb.progress = [&](int64_t, int64_t total) { totals.push_back(total); };
  VaeDecodeOptions second = alone;
  second.tile_share = TileShare{1, 2, [&](const at::Tensor& mine) {
                                  from_1.push_back(mine.clone());
                                  return std::vector<at::Tensor>();
                                }};
  QVERIFY(!vae->decode(z, cb, second).defined());
  QCOMPARE(from_1.size(), size_t(3));
  QCOMPARE(totals, std::vector<int64_t>(6, 6));  // 3 tiles x 2 latent frames, of 3 rounds x 2
  VaeDecodeOptions first = alone;
  size_t round = 0;
  first.tile_share = TileShare{0, 2, [&](const at::Tensor& mine) {
                                 return std::vector<at::Tensor>{mine, from_1.at(round++)};
                               }};
  const at::Tensor got = vae->decode(z, {}, first);
  QCOMPARE(round, size_t(3));
  QVERIFY2(at::equal(got, want), std::to_string(max_abs_diff(got, want)).c_str());
  // Decoder 1's tiles alone are not the video: a share that drops them leaves holes (weight 0).
  first.tile_share = TileShare{0, 2, [](const at::Tensor& mine) { return std::vector<at::Tensor>{mine}; }};
  QVERIFY(!at::equal(vae->decode(z, {}, first), want));
  // One tile shared by 3 decoders: decoder 0 decodes it, the others get zeros to send.
  VaeDecodeOptions whole;
  whole.tiling = VaeTiling{12, 14, 2};
  whole.tile_share = TileShare{2, 3, [](const at::Tensor& mine) {
                                 if (mine.abs().max().item<double>() != 0.0) throw std::runtime_error("decoded a tile");
                                 return std::vector<at::Tensor>();
                               }};
  QVERIFY(!vae->decode(z, {}, whole).defined());
}

// The estimate of vae_tiling.cpp worked by hand for the tiny config (decoder widths 32, 32, 32, 16,
// 8; 3 residual blocks per stage), one 2 x 2 latent frame in fp32: largest conv activation
// 16 ch x 3 frames x 16 x 16 = 12288 values (x4 live, x4 bytes = 196608), chunk cache 87808
// values (351232 bytes), attention 16 logits x 8 bytes + q/k/v/out 4 x 32 x 4 x 4 bytes = 2176,
// video 3 x 32 x 32 x 4 = 12288 bytes (kept twice, one of which is counted as output).
void tst_Vae::decodeMemoryEstimate() {
  const WanVaeConfig tiny = WanVaeConfig::tiny();
  const auto m = estimate_decode_memory(tiny, {1, 8, 1, 2, 2}, 4, std::nullopt);
  QCOMPARE(m.working, int64_t(196608 + 351232 + 12288));
  QCOMPARE(m.output, int64_t(3 * 12288));
  // The [hw, hw] attention logits make untiled decode quadratic in the area: 64 x 64 cells is
  // dominated by 4096^2 x 8 bytes; 16 x 16 tiles cut that to 256^2 x 8 per tile.
  const auto big = estimate_decode_memory(tiny, {1, 8, 1, 64, 64}, 4, std::nullopt);
  QVERIFY(big.working > int64_t(4096) * 4096 * 8);
  const auto tiled = estimate_decode_memory(tiny, {1, 8, 1, 64, 64}, 4, VaeTiling{16, 16, 4});
  QVERIFY(tiled.working * 4 < big.working);
  QCOMPARE(tiled.output - big.output, int64_t(64 * 16) * (64 * 16) * 4);  // the blend weights
  // bf16 weights halve the activations but not the fp32 softmax.
  const auto half = estimate_decode_memory(tiny, {1, 8, 1, 64, 64}, 2, std::nullopt);
  QVERIFY(half.working < big.working && half.working > int64_t(4096) * 4096 * 4);
  // Shapes too big for int64 arithmetic saturate instead of wrapping negative.
  const auto huge = estimate_decode_memory(WanVaeConfig::wan22(), {1, 48, 21, 65536, 65536}, 4, std::nullopt);
  QVERIFY(huge.working > int64_t(1) << 60);
}

void tst_Vae::progressAndCancel() {
  const at::Tensor z = seeded({1, 8, 4, 2, 2}, 3);
  std::vector<std::pair<int64_t, int64_t>> seen;
  VaeCallbacks cb;
  cb.progress = [&](int64_t done, int64_t total) { seen.emplace_back(done, total); };
  tiny_->decode(z, cb);
  QCOMPARE(seen, (std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
  seen.clear();
  cb.cancelled = [&] { return seen.size() >= 2; };
  QVERIFY_THROWS_EXCEPTION(VaeCancelled, tiny_->decode(z, cb));
  QCOMPARE(seen.size(), size_t(2));
  seen.clear();
  QVERIFY_THROWS_EXCEPTION(VaeCancelled, tiny_->encode(seeded_video({1, 3, 9, 16, 16}, 1), cb));
  QCOMPARE(seen, (std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {2, 3}}));
}

void tst_Vae::latentNormalisation() {
  const WanVaeConfig c = WanVaeConfig::wan22();
  QCOMPARE(c.latent_mean.size(), size_t(48));
  QCOMPARE(c.latent_std.size(), size_t(48));
  QCOMPARE(c.latent_mean[0], -0.2289f);
  QCOMPARE(c.latent_mean[19], 0.5109f);
  QCOMPARE(c.latent_std[21], 1.4146f);
  QCOMPARE(c.latent_std[47], 0.7744f);
  const at::Tensor mu = seeded({1, 8, 2, 3, 3}, 9);
  const at::Tensor z = tiny_->normalize(mu);
  QVERIFY(at::allclose(z[0][1], (mu[0][1] - c.latent_mean[1]) / c.latent_std[1]));
  QVERIFY(at::allclose(tiny_->denormalize(z), mu, 1e-5, 1e-6));
}

void tst_Vae::badInputs() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tiny_->encode(at::zeros({1, 3, 4, 16, 16})));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tiny_->encode(at::zeros({1, 3, 1, 20, 16})));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tiny_->decode(at::zeros({1, 7, 1, 2, 2})));
  VaeDecodeOptions bad;
  bad.tiling = VaeTiling{2, 2, 2};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tiny_->decode(at::zeros({1, 8, 1, 4, 4}), {}, bad));
}

void tst_Vae::gpuDecodeMatchesCpu() {
  if (!at::hasCUDA()) QSKIP("No GPU: the GPU decode was not run.");
  // Four latent frames: the first chunk, the cached causal convolutions and the temporal upsampling.
  const at::Tensor z = seeded({1, 8, 4, 6, 10}, 11);
  const at::Tensor want = tiny_->decode(z);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    auto gpu = make_seeded_vae(WanVaeConfig::tiny(), 1234);
    gpu->to(c10::Device(c10::kCUDA, 0), dtype);
    const at::Tensor got = gpu->decode(z.cuda());
    QCOMPARE(got.device().type(), c10::kCUDA);
    QCOMPARE(got.scalar_type(), at::kFloat);
    QCOMPARE(got.sizes(), want.sizes());
    // fp32 convolutions may run in TF32 on the GPU; bf16 rounds every activation.
    const double rel = ((got.cpu() - want).norm() / want.norm()).item<double>();
    QVERIFY2(rel < (dtype == at::kFloat ? 1e-2 : 5e-2), qPrintable(QString("relative L2 %1").arg(rel)));
  }
}

void tst_Vae::fusedResidualBlockMatchesAten_data() {
  QTest::addColumn<int>("in");
  QTest::addColumn<int>("out");
  QTest::newRow("same width") << 16 << 16;
  QTest::newRow("wider: a 1x1 shortcut") << 8 << 16;
}

// The fused path folds conv1's bias into the second norm and conv2's into the residual add: the
// block gives what its ATen ops give, through two norm calls and one residual call, and only where
// the kernels can take x (decoding, channels innermost).
void tst_Vae::fusedResidualBlockMatchesAten() {
  QFETCH(int, in);
  QFETCH(int, out);
  ResidualBlock block(in, out);
  seed_parameters(block, 21);
  const at::Tensor x = (seeded({1, in, 3, 4, 5}, 31) * 2.0).contiguous(at::MemoryFormat::ChannelsLast3d);
  AtenVaeKernels k;
  c10::NoGradGuard no_grad;
  const at::Tensor want = block.forward(x, nullptr);
  const at::Tensor got = block.forward(x, nullptr, &k);
  QCOMPARE(k.norms, 2);
  QCOMPARE(k.residuals, 1);
  QVERIFY2(rel_l2(got, want) < 1e-6, qPrintable(QString::number(rel_l2(got, want))));
  CausalCache with, without;  // the cache holds the conv inputs: the same either way
  for (int chunk = 0; chunk < 2; ++chunk) {
    with.begin_chunk(), without.begin_chunk();
    const at::Tensor c = x.slice(2, chunk, chunk + 1).contiguous(at::MemoryFormat::ChannelsLast3d);
    QVERIFY(rel_l2(block.forward(c, &with, &k), block.forward(c, &without)) < 1e-6);
  }
  k.norms = k.residuals = 0;
  QVERIFY(rel_l2(block.forward(x.contiguous(), nullptr, &k), want) < 1e-6);
  QCOMPARE(k.norms + k.residuals, 0);  // channels not innermost: ATen's ops
  {
    c10::AutoGradMode grad(true);
    QVERIFY(rel_l2(block.forward(x, nullptr, &k), want) < 1e-6);
    QCOMPARE(k.norms + k.residuals, 0);  // training: autograd needs ATen's ops
  }
}

void tst_Vae::gpuFusedKernels_data() {
  QTest::addColumn<int>("channels");
  QTest::addColumn<bool>("fp16");
  QTest::newRow("96 channels (Wan2.1's narrowest), bf16") << 96 << false;
  QTest::newRow("256 channels, fp16") << 256 << true;
  QTest::newRow("1024 channels (Wan2.2's widest), bf16") << 1024 << false;
}

// The plugin's kernels against AtenVaeKernels on the CPU (the same rounded inputs, fp32 maths),
// then a whole decode on them against the CPU reference.
void tst_Vae::gpuFusedKernels() {
  if (!at::hasCUDA()) QSKIP("No GPU: the fused VAE kernels were not run.");
  QFETCH(int, channels);
  QFETCH(bool, fp16);
  auto report = vidgraph::plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin != nullptr, report.message().c_str());
  vidgraph::plugin::VaeKernels* k = report.plugin->backend().vae_kernels();
  QVERIFY(k != nullptr);
  const c10::Device cuda(c10::kCUDA, 0);
  const at::ScalarType half = fp16 ? at::kHalf : at::kBFloat16;
  QVERIFY(k->supports(cuda, half));
  QVERIFY(!k->supports(cuda, at::kFloat));
  QVERIFY(!k->supports(c10::Device(c10::kCPU), half));
  AtenVaeKernels ref;
  const auto cl = at::MemoryFormat::ChannelsLast3d;
  const at::Tensor x = (seeded({1, channels, 3, 5, 7}, 41) * 3.0 + 0.5).to(half).contiguous(cl);
  const at::Tensor h = seeded({1, channels, 3, 5, 7}, 42).to(half).contiguous(cl);
  const at::Tensor b = (seeded({channels}, 43) * 0.5).to(half);
  const at::Tensor g = (seeded({channels, 1, 1, 1}, 44) * 0.2 + 1.0).to(half);
  const at::Tensor img = (seeded({2, channels, 4, 6}, 45) * 2.0).to(half).contiguous(at::MemoryFormat::ChannelsLast);
  try {
    for (const bool silu : {true, false}) {
      const double e =
          rel_l2(k->rms_norm_silu(x.to(cuda), b.to(cuda), g.to(cuda), silu), ref.rms_norm_silu(x, b, g, silu));
      QVERIFY2(e < 1e-2, qPrintable(QString("norm (silu %1): rel-L2 %2").arg(silu).arg(e)));
    }
    QVERIFY(rel_l2(k->rms_norm_silu(x.to(cuda), {}, g.to(cuda), true), ref.rms_norm_silu(x, {}, g, true)) < 1e-2);
    QVERIFY(rel_l2(k->rms_norm_silu(img.to(cuda), {}, g.to(cuda), true), ref.rms_norm_silu(img, {}, g, true)) < 1e-2);
    const at::Tensor y = x.to(cuda);
    const at::Tensor got = k->bias_residual(y, b.to(cuda), h.to(cuda));
    QCOMPARE(got.data_ptr(), y.data_ptr());  // in place
    QVERIFY(rel_l2(got, ref.bias_residual(x.clone(), b, h)) < 1e-2);
  } catch (const std::exception& e) {
    QFAIL(e.what());
  }
  // Bad layout: a clear error naming the tensor, never a launch.
  try {
    k->rms_norm_silu(x.to(cuda).contiguous(), {}, g.to(cuda), true);
    QFAIL("expected an error for an NCDHW x");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("x must be channels-last") != std::string::npos, e.what());
  }
  // A whole decode on the kernels: the same video as ATen's ops, within bf16/fp16 rounding.
  const at::Tensor z = seeded({1, 8, 4, 6, 10}, 11);
  const at::Tensor want = tiny_->decode(z);
  auto gpu = make_seeded_vae(WanVaeConfig::tiny(), 1234);
  gpu->to(cuda, half);
  VaeDecodeOptions fused;
  fused.fused = k;
  const at::Tensor aten = gpu->decode(z.cuda()), on_kernels = gpu->decode(z.cuda(), {}, fused);
  const double rel = rel_l2(on_kernels, want), to_aten = rel_l2(on_kernels, aten);
  QVERIFY2(rel < 5e-2 && to_aten < 5e-2, qPrintable(QString("rel-L2 %1 to the CPU, %2 to ATen").arg(rel).arg(to_aten)));
  // Tiled (random weights see past any tile, so against the CPU's tiled decode, not the untiled one).
  VaeDecodeOptions tiled;
  tiled.tiling = fused.tiling = VaeTiling{4, 6, 2};
  const double rel_tiled = rel_l2(gpu->decode(z.cuda(), {}, fused), tiny_->decode(z, {}, tiled));
  QVERIFY2(rel_tiled < 5e-2, qPrintable(QString("tiled: rel-L2 %1 to the CPU").arg(rel_tiled)));
}

void tst_Vae::keyMapping_data() {
  QTest::addColumn<QString>("official");
  QTest::addColumn<QString>("diffusers");
  // Pairs as diffusers' convert_vae_22 renames them (official config: 2 residual blocks per stage).
  auto row = [](const char* o, const char* d) { QTest::newRow(o) << QString(o) << QString(d); };
  row("conv1.weight", "quant_conv.weight");
  row("conv2.bias", "post_quant_conv.bias");
  row("encoder.conv1.weight", "encoder.conv_in.weight");
  row("decoder.head.0.gamma", "decoder.norm_out.gamma");
  row("encoder.head.2.bias", "encoder.conv_out.bias");
  row("encoder.middle.0.residual.0.gamma", "encoder.mid_block.resnets.0.norm1.gamma");
  row("decoder.middle.2.residual.6.weight", "decoder.mid_block.resnets.1.conv2.weight");
  row("decoder.middle.1.to_qkv.bias", "decoder.mid_block.attentions.0.to_qkv.bias");
  row("encoder.downsamples.1.downsamples.0.shortcut.weight", "encoder.down_blocks.1.resnets.0.conv_shortcut.weight");
  row("encoder.downsamples.0.downsamples.1.residual.3.gamma", "encoder.down_blocks.0.resnets.1.norm2.gamma");
  row("encoder.downsamples.2.downsamples.2.time_conv.weight", "encoder.down_blocks.2.downsampler.time_conv.weight");
  row("encoder.downsamples.0.downsamples.2.resample.1.bias", "encoder.down_blocks.0.downsampler.resample.1.bias");
  row("decoder.upsamples.1.upsamples.2.residual.2.weight", "decoder.up_blocks.1.resnets.2.conv1.weight");
  row("decoder.upsamples.0.upsamples.3.time_conv.bias", "decoder.up_blocks.0.upsampler.time_conv.bias");
  row("decoder.upsamples.2.upsamples.3.resample.1.weight", "decoder.up_blocks.2.upsampler.resample.1.weight");
}

void tst_Vae::keyMapping() {
  QFETCH(QString, official);
  QFETCH(QString, diffusers);
  const WanVaeConfig c = WanVaeConfig::wan22();
  QCOMPARE(QString::fromStdString(vae_key_to_diffusers(official.toStdString(), c)), diffusers);
  QCOMPARE(QString::fromStdString(vae_key_from_diffusers(diffusers.toStdString(), c)), official);
}

void tst_Vae::keyMappingRoundTripsEveryKey() {
  const WanVae vae(WanVaeConfig::wan22());
  std::set<std::string> diffusers_keys;
  for (const auto& item : vae.named_parameters(true)) {
    const std::string d = vae_key_to_diffusers(item.key(), vae.config());
    QVERIFY2(d != item.key(), item.key().c_str());
    QCOMPARE(vae_key_from_diffusers(d, vae.config()), item.key());
    diffusers_keys.insert(d);
  }
  QCOMPARE(diffusers_keys.size(), vae.named_parameters(true).size());
}

void tst_Vae::loadLayouts_data() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("official safetensors") << "official.safetensors";
  QTest::newRow("official pth (zip64)") << "official.pth";
  QTest::newRow("diffusers folder") << "diffusers";
  QTest::newRow("prefixed repack, fp16") << "prefixed.safetensors";
}

void tst_Vae::loadLayouts() {
  QFETCH(QString, kind);
  const NamedTensors params = params_of(*tiny_);
  std::string target = path(kind);
  if (kind == "official.safetensors") {
    save_vae_safetensors(*tiny_, target);
  } else if (kind == "official.pth") {
    vidgraph::test::write_pth(target, params, true);
  } else if (kind == "diffusers") {
    QVERIFY(QDir(dir_.path()).mkpath("diffusers/vae"));
    save_vae_safetensors(*tiny_, path("diffusers/vae/diffusion_pytorch_model.safetensors"), VaeLayout::Diffusers);
  } else {
    NamedTensors prefixed;
    for (const auto& [k, t] : params) {
      prefixed.emplace_back("first_stage_model." + k, t.to(at::kHalf));
    }
    vidgraph::model_io::save_safetensors(target, prefixed);
  }
  const auto loaded = load_wan_vae(target);
  QCOMPARE(loaded->config().z_dim, int64_t(8));
  QCOMPARE(loaded->config().encoder_dim, int64_t(8));
  QCOMPARE(loaded->config().dim_mult, (std::vector<int64_t>{1, 2, 4, 4}));
  QCOMPARE(loaded->config().temporal_downsample, (std::vector<bool>{false, true, true}));
  const bool half = kind.startsWith("prefixed");
  const auto got = loaded->named_parameters(true);
  for (const auto& [k, t] : params) {
    const at::Tensor expected = half ? t.to(at::kHalf).to(at::kFloat) : t;
    QVERIFY2(at::equal(got[k], expected), k.c_str());
  }
  const at::Tensor z = seeded({1, 8, 2, 2, 2}, 21);
  if (!half) {
    QVERIFY(at::equal(loaded->decode(z), tiny_->decode(z)));
  }
}

void tst_Vae::badCheckpoints() {
  auto message = [](const std::string& file) -> std::string {
    try {
      load_wan_vae(file);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  };
  NamedTensors params = params_of(*tiny_);
  // A tensor with the wrong shape: decoder.middle.1.proj.weight [32,32,1,1] -> [32,16,1,1].
  NamedTensors wrong = params;
  for (auto& [k, t] : wrong) {
    if (k == "decoder.middle.1.proj.weight") {
      t = t.narrow(1, 0, 16).contiguous();
    }
  }
  vidgraph::model_io::save_safetensors(path("wrong.safetensors"), wrong);
  std::string m = message(path("wrong.safetensors"));
  QVERIFY2(
      m.find("'decoder.middle.1.proj.weight' has shape [32, 16, 1, 1], expected [32, 32, 1, 1]") != std::string::npos,
      m.c_str());
  // A missing tensor.
  NamedTensors missing;
  for (const auto& [k, t] : params) {
    if (k != "decoder.upsamples.1.upsamples.0.residual.6.bias") {
      missing.emplace_back(k, t);
    }
  }
  vidgraph::model_io::save_safetensors(path("missing.safetensors"), missing);
  m = message(path("missing.safetensors"));
  QVERIFY2(
      m.find("lacks 1 VAE tensor(s), first 'decoder.upsamples.1.upsamples.0.residual.6.bias'") != std::string::npos,
      m.c_str());
  // An extra tensor.
  NamedTensors extra = params;
  extra.emplace_back("decoder.extra.weight", at::zeros({2}));
  vidgraph::model_io::save_safetensors(path("extra.safetensors"), extra);
  m = message(path("extra.safetensors"));
  QVERIFY2(m.find("does not use, first 'decoder.extra.weight'") != std::string::npos, m.c_str());
  // 3 input channels say Wan2.1, whose flat stage keys this Wan2.2 tree lacks; and an unrelated file.
  NamedTensors v21 = params;
  for (auto& [k, t] : v21) {
    if (k == "encoder.conv1.weight") {
      t = at::zeros({8, 3, 3, 3, 3});
    }
  }
  vidgraph::model_io::save_safetensors(path("v21.safetensors"), v21);
  m = message(path("v21.safetensors"));
  QVERIFY2(m.find("does not look like a Wan2.1 VAE: its encoder stages are missing") != std::string::npos, m.c_str());
  vidgraph::model_io::save_safetensors(path("other.safetensors"), {{"blocks.0.weight", at::zeros({2})}});
  m = message(path("other.safetensors"));
  QVERIFY2(m.find("does not hold a Wan VAE") != std::string::npos, m.c_str());
  m = message(dir_.path().toStdString());
  QVERIFY2(m.find("has no vae/diffusion_pytorch_model.safetensors") != std::string::npos, m.c_str());
}

QTEST_GUILESS_MAIN(tst_Vae)
#include "tst_vae.moc"
