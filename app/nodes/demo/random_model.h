// For benchmarks only: writes a Wan2.2-architecture model folder filled with random weights, so the
// whole pipeline can be timed and its memory measured at the real sizes without downloading the
// release. The weights are noise of sensible scale; the videos they make are noise too.
//
// The folder is what Load Wan Model reads (layout detected as for the official release):
//   spiece.model                                   copied from `tokenizer`
//   config.json, diffusion_pytorch_model-0000i-of-0000n.safetensors + .index.json
//                                                  the DiT, official names and layout, bf16
//   Wan2.2_VAE.safetensors                         the VAE (official keys), bf16
//   (a14b-t2v: high_noise_model/ and low_noise_model/ hold one expert each; Wan2.1_VAE.safetensors)
//   text_encoder/model-0000i-of-0000n.safetensors  the umT5 encoder (official keys), bf16
//
// Contract:
//   - Full configs: DiT = WanConfig::ti2v_5b() (~10 GB in bf16), VAE = WanVaeConfig::wan22(), umT5 =
//     Umt5Config::xxl() widths with the tokenizer's vocabulary and `text_layers` layers. Tiny
//     configs (tests): the demo sizes (wan_tiny_config, WanVaeConfig::tiny, Umt5Config::tiny).
//   - Every tensor is filled on `device` (normal draws from that device's generator, seeded with
//     `seed`: reproducible on one device type, not across them), then copied to the host one
//     file at a time: the host holds at most one shard (<= shard_bytes, or the VAE file) and the
//     device holds one model part (DiT, VAE or encoder) at a time.
//   - Scales: matmul/conv weights N(0, 1/fan_in), biases N(0, 0.02^2), norm scales 1 + N(0, 0.1^2),
//     DiT modulation tables N(0, 0.1^2), umT5 token embedding N(0, 1), relative-position tables
//     N(0, 0.5^2).
//   - Errors throw std::runtime_error naming the file or option at fault.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <c10/core/Device.h>

namespace vidgraph::nodes {

struct RandomModelOptions {
  // "5b" (Wan2.2-TI2V-5B), "a14b-t2v" or "a14b-i2v" (Wan2.2-T2V/I2V-A14B: two experts in
  // high_noise_model/ and low_noise_model/, the Wan2.1 VAE as Wan2.1_VAE.safetensors; the official
  // release's layout; I2V's DiT takes 36 channels in), "wan21-1.3b" or "wan21-14b" (Wan2.1 T2V: one
  // DiT and Wan2.1_VAE.safetensors).
  std::string config = "5b";
  bool tiny = false;           // the demo-sized configs instead of the full ones (same layout)
  c10::Device device = c10::Device(c10::kCPU);
  int64_t text_layers = -1;    // umT5 layers; -1 = the config's (24 full, 2 tiny)
  bool sparse_extras = false;  // also write VSA to_gate_compress and SLA* proj_l (random)
  std::string tokenizer;       // spiece.model whose vocabulary sizes the encoder (required)
  uint64_t seed = 0;
  int64_t shard_bytes = int64_t(1) << 30;  // largest DiT / encoder shard
  std::function<void(const std::string&)> log;  // progress lines (optional)
};

struct RandomModelSummary {
  int64_t dit_bytes = 0;
  int64_t vae_bytes = 0;
  int64_t text_encoder_bytes = 0;
  int64_t dit_shards = 0;
  int64_t text_encoder_shards = 0;
};

RandomModelSummary write_random_model(const std::string& out_dir, const RandomModelOptions& options);

}  // namespace vidgraph::nodes
