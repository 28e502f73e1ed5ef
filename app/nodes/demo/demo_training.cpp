// Implements demo_training.h: VAE stage, dataset stage (latents + caption features), DiT stage.
#include "nodes/demo/demo_training.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>
#include <c10/core/GradMode.h>
#include <spdlog/spdlog.h>

#include "models/t5/umt5_checkpoint.h"
#include "models/t5/umt5_prompt.h"
#include "models/train/demo_scenes.h"
#include "models/train/trainer.h"
#include "models/train/vae_train.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

namespace vidgraph::nodes {

namespace fs = std::filesystem;

namespace {

constexpr int kFrames = 25, kWidth = 160, kHeight = 96;
// 1 + 3 x 4 frames. Decoding passes each 4-frame chunk's causal cache to the next, and the VAE holds
// up about as long as the clips it was trained on: trained on 1 + 4 frames, its reconstructions fell
// from 27 dB to 10-15 dB after the second chunk. Whole 25-frame clips reconstruct every frame, but
// the DiT trained on their latents gave a colour jump at the second frame and a blurrier pan.
constexpr int kVaeFrames = 13;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double tail_mean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double sum = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) sum += v[i];
  return sum / n;
}

// Heads of 64 (the smallest head the GPU attention kernels take); `dim` a multiple of 64.
wan::WanConfig demo_dit_config(int dim, int64_t z_dim, int64_t text_dim) {
  wan::WanConfig c = wan::wan_tiny_config();
  c.dim = dim;
  c.num_heads = dim / 64;
  c.ffn_dim = 4 * dim;
  c.num_layers = 4;
  c.in_dim = c.out_dim = z_dim;
  c.text_dim = text_dim;
  c.text_len = 512;
  return c;
}

train::SceneOptions scene_options(const DemoTrainingOptions& o, int frames) {
  train::SceneOptions s;
  s.frames = frames;
  s.width = kWidth;
  s.height = kHeight;
  s.images = {{"landscape", o.image}, {"landscape", o.image_large}};
  return s;
}

double psnr(const at::Tensor& a, const at::Tensor& b) {  // videos in [-1, 1]
  const double mse = ((a - b) * 0.5).pow(2).mean().item<double>();
  return 10.0 * std::log10(1.0 / std::max(mse, 1e-12));
}

// The sample image through the VAE's first-frame path, in dB.
double still_psnr(const DemoTrainingOptions& o, const vae::WanVae& vae) {
  c10::NoGradGuard no_grad;
  const at::Tensor still = train::scene_video(o.image.unsqueeze(0)).unsqueeze(0);
  return psnr(vae.decode(vae.encode(still.to(o.device))).cpu(), still);
}

double shape_colour_error(const DemoTrainingOptions& o, const vae::WanVae& vae) {
  c10::NoGradGuard no_grad;
  const train::SceneOptions scenes = scene_options(o, kFrames);
  const auto& colours = train::scene_shape_colours();
  double total = 0;
  std::string per_colour;
  for (size_t c = 0; c < colours.size(); ++c) {
    train::ScenePlan plan;
    plan.circle = true;
    plan.colour = static_cast<int>(c);
    plan.background = 1;  // black
    const at::Tensor truth = train::scene_video(train::render_scene(plan, scenes));      // [3, T, H, W]
    const at::Tensor decoded = vae.decode(vae.encode(truth.unsqueeze(0).to(o.device)))[0].cpu();
    const at::Tensor inside = (truth - truth.narrow(2, 0, 1).narrow(3, 0, 1)).abs().sum(0) > 0.3;  // [T, H, W]
    const at::Tensor mask = inside.unsqueeze(0).to(at::kFloat);
    const at::Tensor mean = (decoded * mask).sum({2, 3}) / mask.sum({2, 3});  // [3, T] in [-1, 1]
    const at::Tensor target = (truth * mask).sum({2, 3}) / mask.sum({2, 3});
    const double error = ((mean - target) * 127.5).pow(2).sum(0).sqrt().mean().item<double>();
    total += error;
    per_colour += std::string(c ? ", " : "") + colours[c].name + " " + std::to_string(static_cast<int>(error + 0.5));
  }
  spdlog::info("VAE shape colour error (RGB distance, moving circles): {}", per_colour);
  return total / static_cast<double>(colours.size());
}

std::shared_ptr<vae::WanVae> train_demo_vae(const DemoTrainingOptions& o, DemoTrainingReport& report) {
  const auto start = std::chrono::steady_clock::now();
  auto vae = vae::make_seeded_vae(vae::WanVaeConfig::demo(), o.seed + 2);
  vae->to(o.device);
  std::mt19937 random(static_cast<std::uint32_t>(o.seed + 10));
  const train::SceneOptions scenes = scene_options(o, kVaeFrames);
  // Every batch also holds the sample image as a still frame: the demo's first frame is that image.
  const at::Tensor still = train::scene_video(o.image.unsqueeze(0)).unsqueeze(0);
  auto next_batch = [&](int) {
    std::vector<at::Tensor> clips;
    for (int i = 0; i < o.vae_batch; ++i) {
      clips.push_back(train::scene_video(train::render_scene(train::plan_scene(random, scenes), scenes)));
    }
    return at::stack(clips).to(o.device);
  };
  train::VaeTrainOptions options;
  options.steps = o.vae_steps;
  options.lr = o.vae_lr;
  options.on_step = [&](const train::VaeTrainStep& s) {
    if (s.step % 25 == 0 || s.step == s.steps) {
      spdlog::info("VAE step {}/{}: loss {:.4f}, lr {:.2e}, {:.2f} s/step", s.step, s.steps, s.loss, s.lr, s.seconds);
    }
  };
  auto batches = [&](int step) {
    // Every fourth step is the still image alone, so its first-frame path is trained directly.
    return step % 4 == 0 ? still.to(o.device) : next_batch(step);
  };
  const train::VaeTrainResult result = train::train_vae(*vae, batches, options);
  report.vae_loss = tail_mean(result.losses);

  std::vector<at::Tensor> sample;
  for (int i = 0; i < 16; ++i) sample.push_back(next_batch(0));
  train::normalise_vae_latents(*vae, sample);
  report.image_psnr = still_psnr(o, *vae);
  report.shape_colour_error = shape_colour_error(o, *vae);
  report.seconds_vae = seconds_since(start);
  spdlog::info("VAE trained in {:.0f} s: loss {:.4f}, sample image {:.2f} dB, shape colour error {:.1f}",
               report.seconds_vae, report.vae_loss, report.image_psnr, report.shape_colour_error);
  return vae;
}

std::shared_ptr<vae::WanVae> load_demo_vae(const DemoTrainingOptions& o, DemoTrainingReport& report) {
  auto vae = vae::load_wan_vae(o.vae, o.device);
  report.image_psnr = still_psnr(o, *vae);
  report.shape_colour_error = shape_colour_error(o, *vae);
  spdlog::info("Using the VAE '{}': sample image {:.2f} dB, shape colour error {:.1f}", o.vae, report.image_psnr,
               report.shape_colour_error);
  return vae;
}

std::vector<train::TrainingSample> demo_samples(const DemoTrainingOptions& o, const vae::WanVae& vae,
                                                const t5::Umt5Encoder& encoder, const t5::Umt5Tokenizer& tokenizer,
                                                DemoTrainingReport& report) {
  const auto start = std::chrono::steady_clock::now();
  c10::NoGradGuard no_grad;
  std::mt19937 random(static_cast<std::uint32_t>(o.seed + 20));
  const train::SceneOptions scenes = scene_options(o, kFrames);
  std::vector<train::TrainingSample> samples;
  for (int i = 0; i < o.clips; ++i) {
    const train::ScenePlan plan = train::plan_scene(random, scenes);
    const at::Tensor video = train::scene_video(train::render_scene(plan, scenes)).unsqueeze(0).to(o.device);
    const at::Tensor latent = vae.encode(video).squeeze(0).cpu();
    const at::Tensor context = t5::encode_prompts(encoder, tokenizer, {plan.caption()})[0].to(at::kCPU, at::kFloat);
    // Each clip teaches both tasks: from the caption alone, and from its first frame + caption.
    samples.push_back({latent, context, false, at::Tensor(), plan.caption()});
    samples.push_back({latent, context, true, at::Tensor(), plan.caption() + " (i2v)"});
    if ((i + 1) % 20 == 0) spdlog::info("Encoded {}/{} clips", i + 1, o.clips);
  }
  report.seconds_data = seconds_since(start);
  return samples;
}

wan::WanModel train_demo_dit(const DemoTrainingOptions& o, plugin::AttentionBackend& backend,
                             const std::vector<train::TrainingSample>& samples, const at::Tensor& negative,
                             DemoTrainingReport& report) {
  const auto start = std::chrono::steady_clock::now();
  wan::WanModelOptions model_options;
  model_options.config = demo_dit_config(o.dit_dim, samples.front().latent.size(0), negative.size(1));
  model_options.device = o.device;
  // The GPU attention kernels take bf16 (fp32 master weights train it); the CPU reference fp32.
  model_options.compute_dtype = o.device.is_cuda() ? at::kBFloat16 : at::kFloat;
  wan::WanModel dit(model_options);
  wan::wan_init_weights(*dit, o.seed + 3);
  train::TrainOptions t;
  t.mode = train::TrainMode::Full;
  t.method = "vsa";
  t.sparsity = {0.0, 0.5, o.dit_steps / 4};
  t.steps = o.dit_steps;
  t.batch = o.dit_batch;
  t.lr = o.dit_lr;
  t.warmup_steps = std::min(100, o.dit_steps / 10);
  t.lr_schedule = "cosine";
  t.seed = o.seed + 30;
  t.caption_dropout = o.caption_dropout;
  t.empty_context = negative;
  t.on_step = [](const train::TrainStep& s) {
    if (s.step % 50 == 0 || s.step == s.steps) {
      spdlog::info("DiT step {}/{}: loss {:.4f}, lr {:.2e}, {:.3f} s/step", s.step, s.steps, s.loss, s.lr, s.seconds);
    }
  };
  const train::TrainResult result = train::train(*dit, &backend, samples, t);
  report.dit_loss = tail_mean(result.losses);
  report.seconds_dit = seconds_since(start);
  spdlog::info("DiT trained in {:.0f} s: loss {:.4f}", report.seconds_dit, report.dit_loss);
  return dit;
}

}  // namespace

DemoTrainingReport train_demo_model(const std::string& out_dir, plugin::AttentionBackend& backend,
                                    const DemoTrainingOptions& o) {
  if (o.image.dim() != 3 || o.image.size(0) != kHeight || o.image.size(1) != kWidth) {
    throw std::invalid_argument("the demo training image must be uint8 [96, 160, 3]");
  }
  if (o.dit_dim < 64 || o.dit_dim % 64 != 0) {
    throw std::invalid_argument("the demo DiT width must be a multiple of 64, not " + std::to_string(o.dit_dim));
  }
  DemoTrainingReport report;
  const fs::path out(out_dir);
  fs::create_directories(out);
  fs::copy_file(o.tokenizer, out / "spiece.model");
  const t5::Umt5Tokenizer tokenizer = t5::load_umt5_tokenizer((out / "spiece.model").string());
  const t5::Umt5Config text_config = t5::Umt5Config::tiny(tokenizer.vocab_size());
  const auto encoder = t5::make_seeded_umt5(text_config, o.seed + 1);
  encoder->to(o.device);
  t5::save_umt5_safetensors(*encoder, (out / "text_encoder.safetensors").string(), t5::Umt5Layout::Official,
                            at::kBFloat16);

  const auto vae = o.vae.empty() ? train_demo_vae(o, report) : load_demo_vae(o, report);
  vae::save_vae_safetensors(*vae, (out / "vae.safetensors").string(), vae::VaeLayout::Official, at::kBFloat16);

  const auto samples = demo_samples(o, *vae, *encoder, tokenizer, report);
  const at::Tensor negative = [&] {
    c10::NoGradGuard no_grad;
    return t5::encode_prompts(*encoder, tokenizer, {wan::default_negative_prompt()})[0].to(at::kCPU, at::kFloat);
  }();
  wan::WanModel dit = train_demo_dit(o, backend, samples, negative, report);
  wan::WanSaveOptions save;
  save.layout = wan::WanLayout::Official;
  save.dtype = at::kBFloat16;
  wan::wan_save_checkpoint(*dit, out.string(), save);
  return report;
}

}  // namespace vidgraph::nodes
