// Which Wan model a DiT file is, from its tensor names and shapes (any key prefix, official or
// diffusers names) and, where two models share one network, from its path. The one place that
// knows the family: the listing (`vidgraph-run models`), the folder picker and the DiT loader ask
// it, and the loader refuses what Vidgraph does not run, naming the model.
//
//   TI2V-5B        dim 3072, in 48                       Wan2.2-TI2V-5B
//   T2V 14B        dim 5120, in 16                       Wan2.2-T2V-A14B expert or Wan2.1-T2V-14B
//   I2V 14B        dim 5120, in 36                       Wan2.2-I2V-A14B expert
//   T2V 1.3B       dim 1536, in 16                       Wan2.1-T2V-1.3B
//   img_emb / image_embedder (CLIP image branch)         Wan2.1-I2V / FLF2V (emb_pos): not run
//   vace_*, casual_audio_encoder, pose_patch_embedding   VACE, S2V, Animate: not run
// The two A14B experts have one network: the path tells them apart (high_noise / low_noise, or
// diffusers' transformer / transformer_2); without such a hint a 5120-wide T2V DiT is Wan2.1's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vidgraph::model_io {

struct WanDitIdentity {
  std::string id;           // "wan2.2-ti2v-5b", "wan2.2-t2v-a14b", "wan2.1-t2v-1.3b", ...; "wan-dit" for another size
  std::string model;        // "Wan2.2-T2V-A14B": the name users know
  std::string role;         // "high-noise expert", "low-noise expert", or ""
  int64_t latent_channels;  // the VAE's z the DiT works in: 48 (Wan2.2 VAE) or 16 (Wan2.1 VAE), or its out_dim
  std::string unsupported;  // why Vidgraph does not run it ("" when it does)
};

// `tensors`: (stored name, shape) of every tensor of the DiT's files. Nullopt-like result: id ""
// when the tensors are not a Wan DiT (no patch_embedding.weight of rank 5).
WanDitIdentity identify_wan_dit(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                                const std::string& path);

// The low-noise expert beside the high-noise one at `high_path`, by the names the releases use:
// high_noise_model/ -> low_noise_model/ (official), transformer/ -> transformer_2/ (diffusers),
// ..._high_noise_... -> ..._low_noise_... (ComfyUI), ...-HighNoise-... -> ...-LowNoise-... (GGUF).
// "" when the path has no such name or the partner does not exist.
std::string low_noise_partner(const std::string& high_path);

// "Wan2.2-T2V-A14B (high-noise expert)".
std::string wan_dit_description(const WanDitIdentity& identity);

// "high-noise expert" or "low-noise expert" when the file name says so (high_noise, HighNoise,
// high-noise, ...: the names ComfyUI, QuantStack and lightx2v use); else "".
std::string expert_in_file_name(const std::string& path);

// A LoRA file's model, from the width its self-attention query LoRA takes (lora_down or lora_A [rank,
// dim], any naming), and its expert from the file name: "LoRA for Wan2.2-A14B or Wan2.1-14B
// (high-noise expert)"; "" when no such tensor is found.
std::string wan_lora_description(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                                 const std::string& path);

}  // namespace vidgraph::model_io
