// Tests of the Wan2.1 VAE (models/vae with VaeVersion::Wan21, `wan/modules/vae2_1.py`): the module
// tree against an independent enumeration of the official one, encode and decode against an
// independent float64 implementation of the official network on the same random weights
// (vae21_reference.h), chunked
// against whole-sequence paths, tiled decode against untiled, the latent normalisation and preview
// factors, the key mapping of every layout and loading each layout written with the real key names
// (official .pth and safetensors, ComfyUI's bf16 single file, a prefixed repack, a diffusers folder).
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include "models/io/safetensors.h"
#include "models/io/state_dict_file.h"
#include "models/vae/latent_rgb.h"
#include "models/vae/vae_checkpoint.h"
#include "models/vae/wan_vae.h"
#include "model_io_pth_writer.h"
#include "vae21_reference.h"

#include <QtCore/QDir>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <set>

using namespace vidgraph::vae;
using vidgraph::model_io::NamedTensors;
using vidgraph::test::official_vae21_shapes;
using vidgraph::test::ReferenceVae21;

namespace {

at::Tensor seeded(std::vector<int64_t> sizes, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor seeded_video(std::vector<int64_t> sizes, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::rand(sizes, gen, at::TensorOptions().dtype(at::kFloat)) * 2.0 - 1.0;
}

double rel_l2(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor w = want.to(at::kDouble);
  return ((got.to(at::kDouble) - w).norm() / w.norm()).item<double>();
}

NamedTensors params_of(const WanVae& vae) {
  NamedTensors out;
  for (const auto& item : vae.named_parameters(true)) {
    out.emplace_back(item.key(), item.value().detach().clone());
  }
  return out;
}

// Keeps only the centre tap of every 3x3 spatial kernel of the decoder (times `keep` for the rest)
// and zeroes the middle attention's projection: each latent cell then decodes on its own.
std::shared_ptr<WanVae> localized_vae(double keep) {
  auto vae = make_seeded_vae(WanVaeConfig::tiny21(), 2121);
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

}  // namespace

class tst_Vae21 : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void officialTopology();
  void configAndNormalisation();
  void encodeMatchesReference();
  void decodeMatchesReference();
  void chunkedEqualsWhole();
  void tiledDecode();
  void gpuDecodeMatchesCpu();
  void latentRgb16();
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

void tst_Vae21::initTestCase() {
  tiny_ = make_seeded_vae(WanVaeConfig::tiny21(), 2121);
  QVERIFY(dir_.isValid());
}

void tst_Vae21::officialTopology() {
  // The full-size module tree (weights never touched, so never resident) against the enumeration
  // of vae2_1.py's constructors: the same keys with the same shapes.
  for (const WanVaeConfig& c : {WanVaeConfig::wan21(), WanVaeConfig::tiny21()}) {
    const WanVae vae(c);
    const auto want = official_vae21_shapes(c);
    int64_t total = 0;
    std::set<std::string> seen;
    for (const auto& item : vae.named_parameters(true)) {
      const auto it = want.find(item.key());
      QVERIFY2(it != want.end(), ("not in the official tree: " + item.key()).c_str());
      QVERIFY2(item.value().sizes().vec() == it->second, item.key().c_str());
      seen.insert(item.key());
      total += item.value().numel();
    }
    QCOMPARE(seen.size(), want.size());
    if (c.encoder_dim == 96) {
      // 126.9 M parameters: the 508 MB of the fp32 Wan2.1_VAE.pth.
      QCOMPARE(total, int64_t(126892531));
      QCOMPARE(seen.size(), size_t(194));
    }
  }
  const auto params = WanVae(WanVaeConfig::wan21()).named_parameters(true);
  QCOMPARE(params["decoder.upsamples.3.resample.1.weight"].sizes().vec(), (std::vector<int64_t>{192, 384, 3, 3}));
  QCOMPARE(params["decoder.upsamples.3.time_conv.weight"].sizes().vec(), (std::vector<int64_t>{768, 384, 3, 1, 1}));
  QCOMPARE(params["decoder.upsamples.4.shortcut.weight"].sizes().vec(), (std::vector<int64_t>{384, 192, 1, 1, 1}));
  QVERIFY(params.find("decoder.upsamples.11.time_conv.weight") == nullptr);   // upsample2d
  QVERIFY(params.find("encoder.downsamples.2.time_conv.weight") == nullptr);  // downsample2d
  QCOMPARE(params["encoder.downsamples.5.time_conv.weight"].sizes().vec(), (std::vector<int64_t>{192, 192, 3, 1, 1}));
  QCOMPARE(params["encoder.conv1.weight"].sizes().vec(), (std::vector<int64_t>{96, 3, 3, 3, 3}));
  QCOMPARE(params["decoder.head.2.weight"].sizes().vec(), (std::vector<int64_t>{3, 96, 3, 3, 3}));
}

void tst_Vae21::configAndNormalisation() {
  const WanVaeConfig c = WanVaeConfig::wan21();
  QCOMPARE(c.version, VaeVersion::Wan21);
  QCOMPARE(c.spatial_factor(), int64_t(8));
  QCOMPARE(c.temporal_factor(), int64_t(4));
  QCOMPARE(c.patch_size(), int64_t(1));
  QCOMPARE(c.latent_mean.size(), size_t(16));
  QCOMPARE(c.latent_mean[0], -0.7571f);
  QCOMPARE(c.latent_mean[7], 1.5508f);
  QCOMPARE(c.latent_std[8], 3.2687f);
  QCOMPARE(c.latent_std[15], 1.9160f);
  QCOMPARE(WanVaeConfig::wan22().spatial_factor(), int64_t(16));
  const at::Tensor mu = seeded({1, 16, 2, 3, 3}, 9);
  const at::Tensor z = tiny_->normalize(mu);
  QVERIFY(at::allclose(z[0][8], (mu[0][8] - c.latent_mean[8]) / c.latent_std[8]));
}

void tst_Vae21::encodeMatchesReference() {
  const ReferenceVae21 ref(tiny_->config(), params_of(*tiny_));
  const at::Tensor video = seeded_video({1, 3, 9, 32, 48}, 11);
  const at::Tensor got = tiny_->encode(video);
  QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, 16, 3, 4, 6}));
  const at::Tensor want = ref.encode(video);
  const double rel = rel_l2(got, want);
  qInfo("encode vs float64 reference: rel-L2 %.3g", rel);
  QVERIFY2(rel < 1e-5, std::to_string(rel).c_str());
  // The comparison can fail: one weight changed by 1% moves the latent far past the limit.
  auto other = make_seeded_vae(WanVaeConfig::tiny21(), 2121);
  {
    c10::NoGradGuard no_grad;
    other->named_parameters(true)["encoder.downsamples.5.time_conv.weight"].mul_(1.01);
  }
  QVERIFY(rel_l2(other->encode(video), want) > 1e-4);
}

void tst_Vae21::decodeMatchesReference() {
  const ReferenceVae21 ref(tiny_->config(), params_of(*tiny_));
  const at::Tensor z = seeded({1, 16, 4, 3, 5}, 7);
  const at::Tensor got = tiny_->decode(z);
  QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, 3, 13, 24, 40}));
  QCOMPARE(got.scalar_type(), at::kFloat);
  const at::Tensor want = ref.decode(z);
  const double unclamped = (want.abs() < 0.999).to(at::kDouble).mean().item<double>();
  const double rel = rel_l2(got, want);
  qInfo("decode vs float64 reference: rel-L2 %.3g, %.0f%% of values inside (-1, 1)", rel, 100 * unclamped);
  QVERIFY2(unclamped > 0.5, "the clamp hides most of the decoded values");
  QVERIFY2(rel < 1e-5, std::to_string(rel).c_str());
  auto other = make_seeded_vae(WanVaeConfig::tiny21(), 2121);
  {
    c10::NoGradGuard no_grad;
    other->named_parameters(true)["decoder.upsamples.7.time_conv.weight"].mul_(1.01);
  }
  QVERIFY(rel_l2(other->decode(z), want) > 1e-4);
}

void tst_Vae21::chunkedEqualsWhole() {
  const at::Tensor z = seeded({1, 16, 4, 3, 5}, 7);
  const at::Tensor chunked = tiny_->decode(z);
  QVERIFY(rel_l2(tiny_->decode_whole(z), chunked) < 1e-5);
  const at::Tensor video = seeded_video({1, 3, 9, 16, 24}, 3);
  const at::Tensor enc = tiny_->encode(video);
  QVERIFY(rel_l2(tiny_->encode_whole(video), enc) < 1e-5);
  // One frame (an image) is one latent frame, equal to the video's first.
  const at::Tensor image = tiny_->encode(video.slice(2, 0, 1));
  QCOMPARE(image.sizes().vec(), (std::vector<int64_t>{1, 16, 1, 2, 3}));
  QVERIFY(rel_l2(image, enc.slice(2, 0, 1)) < 1e-5);
  // Causality: the last latent frame does not change the frames decoded before it.
  at::Tensor z2 = z.clone();
  z2.select(2, 3).add_(1.0);
  const at::Tensor other = tiny_->decode(z2);
  QVERIFY(at::equal(other.slice(2, 0, 9), chunked.slice(2, 0, 9)));
  QVERIFY((other.slice(2, 9) - chunked.slice(2, 9)).abs().max().item<double>() > 1e-3);
}

void tst_Vae21::tiledDecode() {
  const at::Tensor z = seeded({1, 16, 2, 12, 14}, 5) * 0.5;
  VaeDecodeOptions options;
  options.tiling = VaeTiling{8, 8, 4};
  int64_t calls = 0, last_total = 0;
  VaeCallbacks cb;
  cb.progress = [&](int64_t done, int64_t total) {
    ++calls;
    last_total = total;
  };
  // A decoder that is local on purpose: blending and placement must then be exact.
  auto pointwise = localized_vae(0.0);
  const at::Tensor full = pointwise->decode(z);
  const at::Tensor tiled = pointwise->decode(z, cb, options);
  QCOMPARE(tiled.sizes().vec(), (std::vector<int64_t>{1, 3, 5, 96, 112}));
  QCOMPARE(last_total, int64_t(2 * 3 * 2));  // 2x3 tiles x 2 latent frames
  QCOMPARE(calls, last_total);
  const double exact = (tiled - full).abs().max().item<double>();
  QVERIFY2(exact < 1e-5, std::to_string(exact).c_str());
  // A slightly leaky decoder: seams stay small against the signal.
  auto leaky = localized_vae(0.03);
  const at::Tensor full2 = leaky->decode(z);
  const at::Tensor tiled2 = leaky->decode(z, {}, options);
  const double mean_err = (tiled2 - full2).abs().mean().item<double>();
  qInfo("leaky decoder, tiled vs full: mean |err| %.5f, signal std %.4f", mean_err, full2.std().item<double>());
  QVERIFY(mean_err > 0.0);
  QVERIFY2(mean_err < 0.01 * full2.std().item<double>(), "tiled decode departs from the full decode");
  // The random (non-local) decoder tiled: same shape and range, close on average.
  const at::Tensor tiled3 = tiny_->decode(z, {}, options);
  QCOMPARE(tiled3.sizes().vec(), full.sizes().vec());
  options.tiling = VaeTiling{12, 14, 2};  // one tile = the untiled path
  QVERIFY(at::equal(tiny_->decode(z, {}, options), tiny_->decode(z)));
}

void tst_Vae21::gpuDecodeMatchesCpu() {
  if (!at::hasCUDA()) QSKIP("No GPU: the GPU decode was not run.");
  const at::Tensor z = seeded({1, 16, 4, 6, 10}, 11);
  const at::Tensor want = tiny_->decode(z);
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    auto gpu = make_seeded_vae(WanVaeConfig::tiny21(), 2121);
    gpu->to(c10::Device(c10::kCUDA, 0), dtype);
    const at::Tensor got = gpu->decode(z.cuda());
    QCOMPARE(got.device().type(), c10::kCUDA);
    QCOMPARE(got.sizes(), want.sizes());
    // fp32 convolutions may run in TF32 on the GPU; bf16 rounds every activation.
    const double rel = rel_l2(got.cpu(), want);
    QVERIFY2(rel < (dtype == at::kFloat ? 1e-2 : 5e-2), qPrintable(QString("relative L2 %1").arg(rel)));
  }
}

// ComfyUI's Wan21 factors: channel 2 = 1 -> f[2] + bias = (0.1733, 0.1680, -0.1613); channels 6 = 1
// and 14 = 2 -> f[6] + 2 f[14] + bias = (0.1642, -0.0377, -0.0385); then (rgb + 1) / 2.
void tst_Vae21::latentRgb16() {
  at::Tensor frame = at::zeros({16, 1, 2});
  frame[2][0][0] = 1.0;
  frame[6][0][1] = 1.0;
  frame[14][0][1] = 2.0;
  const at::Tensor rgb = latent_to_rgb(frame);
  const double want[3][2] = {{0.58665, 0.5821}, {0.5840, 0.48115}, {0.41935, 0.48075}};
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 2; ++x) {
      QVERIFY2(std::abs(rgb[c][0][x].item<double>() - want[c][x]) < 1e-5,
               qPrintable(QString("channel %1 pixel %2: %3").arg(c).arg(x).arg(rgb[c][0][x].item<double>())));
    }
  }
  QCOMPARE(wan21_latent_rgb_factors().sizes().vec(), (std::vector<int64_t>{16, 3}));
}

void tst_Vae21::keyMapping_data() {
  QTest::addColumn<QString>("official");
  QTest::addColumn<QString>("diffusers");
  // As diffusers' convert_vae (Wan2.1) renames them, official config (2 residual blocks per stage).
  auto row = [](const char* o, const char* d) { QTest::newRow(o) << QString(o) << QString(d); };
  row("conv1.weight", "quant_conv.weight");
  row("encoder.conv1.bias", "encoder.conv_in.bias");
  row("decoder.head.0.gamma", "decoder.norm_out.gamma");
  row("encoder.middle.2.residual.3.gamma", "encoder.mid_block.resnets.1.norm2.gamma");
  row("decoder.middle.1.proj.weight", "decoder.mid_block.attentions.0.proj.weight");
  row("encoder.downsamples.0.residual.0.gamma", "encoder.down_blocks.0.norm1.gamma");
  row("encoder.downsamples.3.shortcut.weight", "encoder.down_blocks.3.conv_shortcut.weight");
  row("encoder.downsamples.2.resample.1.weight", "encoder.down_blocks.2.resample.1.weight");
  row("encoder.downsamples.5.time_conv.bias", "encoder.down_blocks.5.time_conv.bias");
  row("decoder.upsamples.2.residual.6.weight", "decoder.up_blocks.0.resnets.2.conv2.weight");
  row("decoder.upsamples.3.time_conv.weight", "decoder.up_blocks.0.upsamplers.0.time_conv.weight");
  row("decoder.upsamples.4.shortcut.bias", "decoder.up_blocks.1.resnets.0.conv_shortcut.bias");
  row("decoder.upsamples.7.resample.1.bias", "decoder.up_blocks.1.upsamplers.0.resample.1.bias");
  row("decoder.upsamples.11.resample.1.weight", "decoder.up_blocks.2.upsamplers.0.resample.1.weight");
  row("decoder.upsamples.14.residual.2.weight", "decoder.up_blocks.3.resnets.2.conv1.weight");
}

void tst_Vae21::keyMapping() {
  QFETCH(QString, official);
  QFETCH(QString, diffusers);
  const WanVaeConfig c = WanVaeConfig::wan21();
  QCOMPARE(QString::fromStdString(vae_key_to_diffusers(official.toStdString(), c)), diffusers);
  QCOMPARE(QString::fromStdString(vae_key_from_diffusers(diffusers.toStdString(), c)), official);
}

void tst_Vae21::keyMappingRoundTripsEveryKey() {
  const WanVae vae(WanVaeConfig::wan21());
  std::set<std::string> diffusers_keys;
  for (const auto& item : vae.named_parameters(true)) {
    const std::string d = vae_key_to_diffusers(item.key(), vae.config());
    QVERIFY2(d != item.key(), item.key().c_str());
    QCOMPARE(vae_key_from_diffusers(d, vae.config()), item.key());
    diffusers_keys.insert(d);
  }
  QCOMPARE(diffusers_keys.size(), vae.named_parameters(true).size());
}

void tst_Vae21::loadLayouts_data() {
  QTest::addColumn<QString>("kind");
  QTest::newRow("official safetensors") << "official.safetensors";
  QTest::newRow("official pth (Wan2.1_VAE.pth)") << "official.pth";
  QTest::newRow("ComfyUI single file, bf16") << "wan_2.1_vae.safetensors";
  QTest::newRow("prefixed repack, fp16") << "prefixed.safetensors";
  QTest::newRow("diffusers folder") << "diffusers";
}

void tst_Vae21::loadLayouts() {
  QFETCH(QString, kind);
  const NamedTensors params = params_of(*tiny_);
  std::string target = path(kind);
  at::ScalarType stored = at::kFloat;
  if (kind == "official.safetensors") {
    save_vae_safetensors(*tiny_, target);
  } else if (kind == "official.pth") {
    vidgraph::test::write_pth(target, params, false);
  } else if (kind == "wan_2.1_vae.safetensors") {
    stored = at::kBFloat16;
    save_vae_safetensors(*tiny_, target, VaeLayout::Official, stored);
  } else if (kind == "prefixed.safetensors") {
    stored = at::kHalf;
    NamedTensors prefixed;
    for (const auto& [k, t] : params) prefixed.emplace_back("first_stage_model." + k, t.to(stored));
    vidgraph::model_io::save_safetensors(target, prefixed);
  } else {
    QVERIFY(QDir(dir_.path()).mkpath("diffusers/vae"));
    const std::string file = path("diffusers/vae/diffusion_pytorch_model.safetensors");
    save_vae_safetensors(*tiny_, file, VaeLayout::Diffusers);
    // The file holds diffusers' names, flat encoder list and grouped decoder.
    const NamedTensors written = vidgraph::model_io::load_state_dict_file(file, c10::Device(c10::kCPU), at::kFloat);
    for (const char* key : {"encoder.down_blocks.5.time_conv.weight", "encoder.down_blocks.3.conv_shortcut.weight",
                            "decoder.up_blocks.1.resnets.0.conv_shortcut.weight",
                            "decoder.up_blocks.0.upsamplers.0.time_conv.weight", "post_quant_conv.weight"}) {
      QVERIFY2(vidgraph::model_io::find_tensor(written, key) != nullptr, key);
    }
    QCOMPARE(written.size(), params.size());
    target = path("diffusers");
  }
  const auto loaded = load_wan_vae(target);
  const WanVaeConfig& c = loaded->config();
  QCOMPARE(c.version, VaeVersion::Wan21);
  QCOMPARE(c.z_dim, int64_t(16));
  QCOMPARE(c.encoder_dim, int64_t(8));
  QCOMPARE(c.decoder_dim, int64_t(8));
  QCOMPARE(c.num_res_blocks, int64_t(2));
  QCOMPARE(c.dim_mult, (std::vector<int64_t>{1, 2, 4, 4}));
  QCOMPARE(c.temporal_downsample, (std::vector<bool>{false, true, true}));
  QCOMPARE(c.latent_mean, wan21_latent_mean());
  QCOMPARE(c.latent_std, wan21_latent_std());
  const auto got = loaded->named_parameters(true);
  QCOMPARE(got.size(), params.size());
  for (const auto& [k, t] : params) {
    QVERIFY2(at::equal(got[k], t.to(stored).to(at::kFloat)), k.c_str());
  }
  const at::Tensor z = seeded({1, 16, 2, 2, 3}, 21);
  if (stored == at::kFloat) {
    QVERIFY(at::equal(loaded->decode(z), tiny_->decode(z)));
  } else {
    QVERIFY(rel_l2(loaded->decode(z), tiny_->decode(z)) < 0.1);
  }
}

void tst_Vae21::badCheckpoints() {
  auto message = [](const std::string& file) -> std::string {
    try {
      load_wan_vae(file);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  };
  const NamedTensors params = params_of(*tiny_);
  // A Wan2.1 file missing one of its flat-list tensors.
  NamedTensors missing;
  for (const auto& [k, t] : params) {
    if (k != "decoder.upsamples.7.time_conv.bias") missing.emplace_back(k, t);
  }
  vidgraph::model_io::save_safetensors(path("missing21.safetensors"), missing);
  std::string m = message(path("missing21.safetensors"));
  QVERIFY2(m.find("lacks 1 VAE tensor(s), first 'decoder.upsamples.7.time_conv.bias'") != std::string::npos, m.c_str());
  // An encoder input of neither 3 (Wan2.1) nor 12 (Wan2.2) channels.
  NamedTensors odd = params;
  for (auto& [k, t] : odd) {
    if (k == "encoder.conv1.weight") t = at::zeros({8, 5, 3, 3, 3});
  }
  vidgraph::model_io::save_safetensors(path("odd.safetensors"), odd);
  m = message(path("odd.safetensors"));
  QVERIFY2(m.find("expected [dim, 3, 3, 3, 3] (Wan2.1) or [dim, 12, 3, 3, 3] (Wan2.2)") != std::string::npos,
           m.c_str());
  // More latent channels than Wan2.1's normalisation has.
  auto wide = make_seeded_vae(
      [] {
        WanVaeConfig c = WanVaeConfig::tiny21();
        c.z_dim = 20;
        c.latent_mean.assign(20, 0.0f);
        c.latent_std.assign(20, 1.0f);
        return c;
      }(),
      1);
  save_vae_safetensors(*wide, path("wide.safetensors"));
  m = message(path("wide.safetensors"));
  QVERIFY2(m.find("a Wan2.1 VAE with z = 20 has no known latent normalisation (Wan2.1 uses 16)") != std::string::npos,
           m.c_str());
}

QTEST_GUILESS_MAIN(tst_Vae21)
#include "tst_vae21.moc"
