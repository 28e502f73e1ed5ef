// The demo model's training, start to finish, with Vidgraph's own training code: the tiny Wan2.2
// VAE learns to reconstruct procedural scenes (models/train/demo_scenes.h) and crops of the sample
// image; then the tiny DiT learns, with flow matching and vsa attention (models/train/trainer.h),
// to make those clips from their captions (text-to-video) and from their first frame plus caption
// (image-to-video). The text encoder is a seeded umT5 over the demo tokenizer; it is not trained:
// its outputs are fixed features the DiT learns to read.
// Writes the model folder Load Wan Model reads: spiece.model, text_encoder.safetensors,
// vae.safetensors, config.json + diffusion_pytorch_model.safetensors (bf16 DiT and encoder).
#pragma once

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "plugins/api/attention_backend.h"

namespace vidgraph::nodes {

struct DemoTrainingOptions {
  uint64_t seed = 2022;
  c10::Device device = c10::Device(c10::kCPU);
  std::string tokenizer;     // spiece.model of the demo tokenizer (copied into the folder)
  at::Tensor image;          // uint8 [96, 160, 3]: the sample image as Load Image gives it
  at::Tensor image_large;    // uint8 [192, 320, 3]: the same at twice the size, for crops
  std::string vae;           // a trained demo VAE (vae.safetensors of a model folder): skips the VAE stage
  int vae_steps = 3500, vae_batch = 4;
  int clips = 1280;          // training clips of 25 frames for the DiT
  int dit_steps = 5000, dit_batch = 32;
  int dit_dim = 256;         // DiT width: heads of 64, feed-forward 4x
  double vae_lr = 2e-3, dit_lr = 5e-4;
  // The share of DiT samples trained on the default negative prompt instead of their caption, so
  // that guidance above 1 (which the sampler takes against that prompt) has an unconditional branch.
  double caption_dropout = 0.1;
};

struct DemoTrainingReport {
  double vae_loss = 0, dit_loss = 0;  // mean of the last 10 % of steps
  double image_psnr = 0;              // the sample image through the VAE (first-frame path)
  // Text-to-video can only be as right as the VAE keeps colours: the RGB distance (0..441) between
  // each shape colour and the mean of its decoded pixels, for a circle moving right on black over
  // the demo's 25 frames, averaged over frames and colours.
  double shape_colour_error = 0;
  double seconds_vae = 0, seconds_data = 0, seconds_dit = 0;
};

// Trains and writes `out_dir` (which must not exist; the caller publishes it). Progress on spdlog.
DemoTrainingReport train_demo_model(const std::string& out_dir, plugin::AttentionBackend& backend,
                                    const DemoTrainingOptions& options);

}  // namespace vidgraph::nodes
