// The demo model's training pieces in models/train: the procedural scene generator (deterministic
// per seed, captions that say what the pixels show) and the VAE autoencoder step (the loss drops
// on a fixed clip; the latent-statistics fold keeps reconstructions and normalises latents).
#include <random>
#include <set>

#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include "models/train/demo_scenes.h"
#include "models/train/vae_train.h"
#include "models/vae/vae_checkpoint.h"

#include <QtTest/QtTest>

using namespace vidgraph;

namespace {

train::SceneOptions small_scenes() {
  train::SceneOptions o;
  o.frames = 9;
  o.width = 64;
  o.height = 32;
  // A horizontal ramp as the image: pans and zooms over it are easy to measure.
  at::Tensor ramp = at::arange(128, at::kFloat).div(127.0).mul(255.0).to(at::kByte).view({1, 128, 1});
  o.images = {{"ramp", ramp.expand({64, 128, 3}).contiguous()}};
  return o;
}

// Share of a frame's pixels within 40 of `rgb`.
double colour_share(const at::Tensor& frame, const std::uint8_t* rgb) {
  const at::Tensor target = at::tensor(std::vector<float>{float(rgb[0]), float(rgb[1]), float(rgb[2])});
  const at::Tensor d = (frame.to(at::kFloat) - target).abs().amax(-1);
  return (d < 40).to(at::kFloat).mean().item<double>();
}

// Mean column (x) of the pixels of `rgb` in a frame.
double colour_x(const at::Tensor& frame, const std::uint8_t* rgb) {
  const at::Tensor target = at::tensor(std::vector<float>{float(rgb[0]), float(rgb[1]), float(rgb[2])});
  const at::Tensor mask = ((frame.to(at::kFloat) - target).abs().amax(-1) < 40).to(at::kFloat);  // [H, W]
  const at::Tensor x = at::arange(frame.size(1), at::kFloat).view({1, -1});
  return (mask * x).sum().item<double>() / std::max(1.0, mask.sum().item<double>());
}

}  // namespace

class tst_demo_train : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void scenesAreDeterministicPerSeed() {
    const train::SceneOptions o = small_scenes();
    std::mt19937 a(7), b(7), c(8);
    std::set<std::string> captions;
    bool differs = false;
    for (int i = 0; i < 12; ++i) {
      const train::ScenePlan pa = train::plan_scene(a, o), pb = train::plan_scene(b, o), pc = train::plan_scene(c, o);
      QCOMPARE(pa.caption(), pb.caption());
      const at::Tensor fa = train::render_scene(pa, o);
      QVERIFY(at::equal(fa, train::render_scene(pb, o)));
      QCOMPARE(fa.sizes().vec(), (std::vector<int64_t>{9, 32, 64, 3}));
      QCOMPARE(fa.scalar_type(), at::kByte);
      differs = differs || pa.caption() != pc.caption();
      captions.insert(pa.caption());
    }
    QVERIFY2(differs, "another seed gives other scenes");
    QVERIFY2(captions.size() >= 8, "twelve scenes have varied captions");
  }

  void shapeCaptionsMatchPixels() {
    const train::SceneOptions o = small_scenes();
    std::mt19937 random(3);
    int checked = 0;
    for (int i = 0; i < 60; ++i) {
      const train::ScenePlan p = train::plan_scene(random, o);
      if (p.kind != train::SceneKind::Shape) continue;
      const at::Tensor frames = train::render_scene(p, o);
      const auto& colour = train::scene_shape_colours()[p.colour];
      const auto& background = train::scene_backgrounds()[p.background];
      const std::string caption = p.caption();
      QVERIFY2(caption.find(std::string(colour.name) + (p.circle ? " circle" : " square")) != std::string::npos, caption.c_str());
      QVERIFY2(caption.find(std::string("on a ") + background.name + " background") != std::string::npos, caption.c_str());
      const double first = colour_share(frames[0], colour.rgb), last = colour_share(frames[-1], colour.rgb);
      QVERIFY2(first > 0.01 && last > 0.01, ("the named colour is in the frames: " + caption).c_str());
      QVERIFY2(colour_share(frames[0], background.rgb) > 0.3, ("the named background fills the rest: " + caption).c_str());
      if (caption.find("moving right") != std::string::npos) QVERIFY(colour_x(frames[-1], colour.rgb) > colour_x(frames[0], colour.rgb) + 10);
      if (caption.find("moving left") != std::string::npos) QVERIFY(colour_x(frames[-1], colour.rgb) < colour_x(frames[0], colour.rgb) - 10);
      if (caption.find("growing") != std::string::npos) QVERIFY(last > first * 2);
      if (caption.find("shrinking") != std::string::npos) QVERIFY(first > last * 2);
      ++checked;
    }
    QVERIFY(checked >= 15);
  }

  void cameraCaptionsMatchMotion() {
    train::SceneOptions o = small_scenes();
    o.full_view = 1.0;  // whole-image views: frame 0 is the image itself
    std::mt19937 random(5);
    int pans = 0;
    for (int i = 0; i < 80; ++i) {
      const train::ScenePlan p = train::plan_scene(random, o);
      if (p.kind != train::SceneKind::Camera || p.picture != train::ScenePicture::Image) continue;
      const std::string caption = p.caption();
      QVERIFY2(caption.rfind("the camera ", 0) == 0 && caption.find("the ramp") != std::string::npos, caption.c_str());
      const at::Tensor frames = train::render_scene(p, o).to(at::kFloat);
      // The ramp, resized to 64 wide, rises by 4 per column: a pan right by 1 px per frame brightens
      // the frame's left part (content moves left), a pan left darkens it.
      const double change = (frames[-1] - frames[0]).slice(1, 8, 40).mean().item<double>();
      if (caption.find("pans right") != std::string::npos) QVERIFY2(change > 10, caption.c_str());
      if (caption.find("pans left") != std::string::npos) QVERIFY2(change < -10, caption.c_str());
      if (caption.find("pans up") != std::string::npos || caption.find("pans down") != std::string::npos) {
        QVERIFY2(std::abs(change) < 2, caption.c_str());
      }
      pans += caption.find("pans left") != std::string::npos || caption.find("pans right") != std::string::npos;
    }
    QVERIFY(pans >= 3);
  }

  void sceneVideoLayout() {
    const at::Tensor frames = at::full({2, 4, 6, 3}, 255, at::kByte);
    const at::Tensor v = train::scene_video(frames);
    QCOMPARE(v.sizes().vec(), (std::vector<int64_t>{3, 2, 4, 6}));
    QVERIFY(at::allclose(v, at::ones_like(v)));
  }

  void vaeLossDropsOnFixedClip() {
    vae::WanVaeConfig config = vae::WanVaeConfig::tiny();
    auto model = vae::make_seeded_vae(config, 11);
    train::SceneOptions o = small_scenes();
    o.frames = 5;
    o.width = 64;
    o.height = 48;
    std::mt19937 random(1);
    const at::Tensor clip = train::scene_video(train::render_scene(train::plan_scene(random, o), o)).unsqueeze(0);
    const double before = train::vae_reconstruction_loss(*model, clip).item<double>();
    train::VaeTrainOptions options;
    options.steps = 40;
    options.lr = 3e-3;
    options.warmup_steps = 2;
    int reported = 0;
    options.on_step = [&](const train::VaeTrainStep& s) { reported = s.step; };
    const train::VaeTrainResult r = train::train_vae(*model, [&](int) { return clip; }, options);
    QCOMPARE(r.steps_done, 40);
    QCOMPARE(reported, 40);
    const double after = train::vae_reconstruction_loss(*model, clip).item<double>();
    QVERIFY2(after < 0.5 * before, (std::to_string(before) + " -> " + std::to_string(after)).c_str());
    for (const at::Tensor& p : model->parameters()) QVERIFY(!p.requires_grad());

    // Folding the latent statistics: same reconstruction, unit-variance normalised latents.
    const at::Tensor decoded = model->decode(model->encode(clip));
    train::normalise_vae_latents(*model, {clip});
    const at::Tensor z = model->encode(clip);
    QVERIFY2(std::abs(z.mean().item<double>()) < 0.05, std::to_string(z.mean().item<double>()).c_str());
    QVERIFY2(std::abs(z.transpose(0, 1).reshape({z.size(1), -1}).std(1).mean().item<double>() - 1.0) < 0.05,
             "per-channel std 1");
    QVERIFY((model->decode(z) - decoded).abs().max().item<double>() < 1e-3);
  }

  void vaeOptionErrors() {
    auto model = vae::make_seeded_vae(vae::WanVaeConfig::tiny(), 1);
    train::VaeTrainOptions options;
    options.steps = 0;
    QVERIFY_EXCEPTION_THROWN(train::train_vae(*model, [](int) { return at::Tensor(); }, options), std::invalid_argument);
    options.steps = 1;
    // A frame count the causal VAE cannot take (not 1 + 4k).
    QVERIFY_EXCEPTION_THROWN(train::train_vae(*model, [](int) { return at::zeros({1, 3, 3, 32, 32}); }, options),
                             std::invalid_argument);
  }
};

QTEST_APPLESS_MAIN(tst_demo_train)
#include "tst_demo_train.moc"
