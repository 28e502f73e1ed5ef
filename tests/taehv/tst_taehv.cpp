// TAEHV light decoder (taew2_2): a `.pth` written here with the reference's key names at the real
// widths (random seeded weights) decodes like an independent float64 implementation of the
// reference's decoder (whole sequence at once); frame counts 1 + 4(T - 1), 16x sizes, chunking
// invariance, progress, cancellation and errors. Also the decoder-free preview projection
// (latent_rgb.h) against values computed by hand.
#include <ATen/TensorOperators.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "model_io_pth_writer.h"
#include "taehv_test_weights.h"
#include "models/vae/latent_rgb.h"
#include "models/vae/taehv.h"

using namespace vidgraph;
using namespace vidgraph::vae;

namespace {

using vidgraph::test::Weights;
using vidgraph::test::taew2_2_weights;

constexpr int64_t kLatent = 48;
const std::vector<int64_t> kWidths{256, 128, 64, 64};

// The reference's decoder written from its definition, in float64, all frames at once: z [T, C, h, w]
// -> frames [T', 3, H, W] in [0, 1] after dropping the first 3.
at::Tensor reference_decode(const Weights& weights, const at::Tensor& z) {
  std::map<std::string, at::Tensor> sd;
  for (const auto& [k, t] : weights) sd[k] = t.to(at::kDouble);
  auto conv = [&](const at::Tensor& x, const std::string& name, int64_t pad) {
    const auto b = sd.find(name + ".bias");
    return at::conv2d(x, sd.at(name + ".weight"), b == sd.end() ? at::Tensor() : b->second, {1, 1}, {pad, pad});
  };
  at::Tensor x = z.to(at::kDouble);
  x = at::tanh(x / 3.0) * 3.0;
  x = at::relu(conv(x, "decoder.1", 1));
  const int first[3] = {3, 9, 15}, grow[3] = {7, 13, 19}, proj[3] = {8, 14, 20};
  const int64_t stride[3] = {1, 2, 2};
  for (int s = 0; s < 3; ++s) {
    for (int b = 0; b < 3; ++b) {
      const std::string p = "decoder." + std::to_string(first[s] + b) + ".conv.";
      const int64_t t = x.size(0);
      const at::Tensor past = at::cat({at::zeros_like(x.narrow(0, 0, 1)), x.narrow(0, 0, t - 1)}, 0);
      at::Tensor h = at::relu(conv(at::cat({x, past}, 1), p + "0", 1));
      h = at::relu(conv(h, p + "2", 1));
      x = at::relu(conv(h, p + "4", 1) + x);
    }
    x = x.repeat_interleave(2, 2).repeat_interleave(2, 3);  // nearest 2x
    const at::Tensor gw = sd.at("decoder." + std::to_string(grow[s]) + ".conv.weight");
    const int64_t c = x.size(1), keep = c * stride[s];
    const at::Tensor y = at::conv2d(x, gw.narrow(0, gw.size(0) - keep, keep));  // [T, s*C, H, W]
    x = y.reshape({x.size(0) * stride[s], c, x.size(2), x.size(3)});
    x = conv(x, "decoder." + std::to_string(proj[s]), 1);
  }
  x = conv(at::relu(x), "decoder.22", 1);  // [T, 12, H, W]
  const int64_t t = x.size(0), h = x.size(2), w = x.size(3);
  x = x.reshape({t, 3, 2, 2, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape({t, 3, 2 * h, 2 * w});  // pixel shuffle
  x = x.clamp(0.0, 1.0);
  return x.narrow(0, 3, t - 3);
}

}  // namespace

class tst_taehv : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void matchesReference_data();
  void matchesReference();
  void chunkingAndCallbacks();
  void errors();
  void latentRgbWan22();
  void latentRgbOtherChannels();

 private:
  QTemporaryDir dir_;
  std::string path_;
  Weights weights_;
};

void tst_taehv::initTestCase() {
  c10::GradMode::set_enabled(false);
  weights_ = taew2_2_weights(2025);
  path_ = dir_.filePath("taew2_2.pth").toStdString();
  vidgraph::test::write_pth(path_, weights_);
}

void tst_taehv::matchesReference_data() {
  QTest::addColumn<int>("latent_frames");
  QTest::newRow("1 latent frame (an image)") << 1;
  QTest::newRow("3 latent frames (9 frames)") << 3;
}

void tst_taehv::matchesReference() {
  QFETCH(int, latent_frames);
  const auto decoder = TaehvDecoder::load(path_);
  QCOMPARE(decoder->config().latent_channels, kLatent);
  QCOMPARE(decoder->config().patch_size, int64_t(2));
  QCOMPARE(decoder->config().widths, kWidths);
  QCOMPARE(decoder->config().spatial_upscale(), int64_t(16));
  QCOMPARE(decoder->config().temporal_upscale(), int64_t(4));
  const at::Tensor z = at::randn({1, kLatent, latent_frames, 2, 3}, at::detail::createCPUGenerator(7));
  const at::Tensor video = decoder->decode(z);
  QCOMPARE(video.sizes().vec(), (std::vector<int64_t>{1, 3, 1 + 4 * (latent_frames - 1), 32, 48}));
  const at::Tensor expected = reference_decode(weights_, z[0].permute({1, 0, 2, 3})).permute({1, 0, 2, 3});
  const at::Tensor got = ((video[0] + 1.0) / 2.0).to(at::kDouble);
  const double max_diff = (got - expected).abs().max().item<double>();
  QVERIFY2(max_diff < 1e-4, qPrintable(QString("max |ours - reference| = %1").arg(max_diff)));
  // The comparison is not decided by the clamp: most pixels lie inside (0, 1).
  const double inside = ((expected > 0.0) * (expected < 1.0)).to(at::kDouble).mean().item<double>();
  QVERIFY2(inside > 0.3, qPrintable(QString("only %1 of the pixels are unclamped").arg(inside)));
}

void tst_taehv::chunkingAndCallbacks() {
  const auto decoder = TaehvDecoder::load(path_);
  const at::Tensor z = at::randn({2, kLatent, 5, 2, 2}, at::detail::createCPUGenerator(8));
  std::vector<std::pair<int64_t, int64_t>> progress;
  VaeCallbacks cb;
  cb.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
  const at::Tensor one = decoder->decode(z, cb, 1);
  QCOMPARE(one.sizes().vec(), (std::vector<int64_t>{2, 3, 17, 32, 32}));
  QCOMPARE(int(progress.size()), 10);  // 5 chunks per batch item
  QCOMPARE(progress.back(), std::make_pair(int64_t(5), int64_t(5)));
  const at::Tensor all = decoder->decode(z, {}, 5);
  const at::Tensor two = decoder->decode(z, {}, 2);
  const double d1 = (one - all).abs().max().item<double>(), d2 = (two - all).abs().max().item<double>();
  QVERIFY2(d1 < 1e-5 && d2 < 1e-5, qPrintable(QString("chunked vs whole: %1, %2").arg(d1).arg(d2)));
  QVERIFY(one.min().item<float>() >= -1.0f && one.max().item<float>() <= 1.0f);
  int polls = 0;
  cb.cancelled = [&] { return ++polls == 2; };
  QVERIFY_THROWS_EXCEPTION(VaeCancelled, decoder->decode(z, cb, 1));
}

void tst_taehv::errors() {
  const auto decoder = TaehvDecoder::load(path_);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decoder->decode(at::zeros({1, 16, 2, 2, 2})));
  Weights broken;
  for (const auto& [k, t] : weights_) {
    if (k != "decoder.10.conv.2.weight") broken.emplace_back(k, t);
  }
  const std::string bad = dir_.filePath("broken.pth").toStdString();
  vidgraph::test::write_pth(bad, broken);
  try {
    TaehvDecoder::load(bad);
    QFAIL("a checkpoint without decoder.10.conv.2.weight loaded");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("decoder.10.conv.2.weight") != std::string::npos, e.what());
  }
}

QTEST_GUILESS_MAIN(tst_taehv)
// Three pixels of a 48-channel latent: channel 39 = 1 -> factors[39] + bias = (-0.3124, -0.4421,
// -0.3396); channels 21 = 2 and 37 = 1 -> 2 f[21] + f[37] + bias = (0.2930, 0.1928, 0.6588); channel
// 39 = 10 saturates to 0. Then (rgb + 1) / 2.
void tst_taehv::latentRgbWan22() {
  at::Tensor frame = at::zeros({48, 1, 3});
  frame[39][0][0] = 1.0;
  frame[21][0][1] = 2.0;
  frame[37][0][1] = 1.0;
  frame[39][0][2] = 10.0;
  const at::Tensor rgb = latent_to_rgb(frame);
  QCOMPARE(rgb.sizes().vec(), (std::vector<int64_t>{3, 1, 3}));
  const double want[3][3] = {{0.3438, 0.6465, 0.0}, {0.27895, 0.5964, 0.0}, {0.3302, 0.8294, 0.0}};
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 3; ++x) {
      QVERIFY2(std::abs(rgb[c][0][x].item<double>() - want[c][x]) < 1e-5,
               qPrintable(QString("channel %1 pixel %2: %3").arg(c).arg(x).arg(rgb[c][0][x].item<double>())));
    }
  }
  QCOMPARE(wan22_latent_rgb_factors().sizes().vec(), (std::vector<int64_t>{48, 3}));
}

// Not 48 channels: channels 0, 1 and (only two exist) 0 again, each stretched min..max -> 0..1; a
// flat channel is 0.5.
void tst_taehv::latentRgbOtherChannels() {
  at::Tensor frame = at::zeros({2, 1, 3});
  frame[0][0][0] = 1.0;
  frame[0][0][1] = 3.0;
  frame[0][0][2] = 5.0;
  frame[1].fill_(2.0);
  const at::Tensor rgb = latent_to_rgb(frame);
  const double want[3][3] = {{0.0, 0.5, 1.0}, {0.5, 0.5, 0.5}, {0.0, 0.5, 1.0}};
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 3; ++x) QCOMPARE(rgb[c][0][x].item<double>(), want[c][x]);
  }
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, latent_to_rgb(at::zeros({4, 4})));
}

#include "tst_taehv.moc"
