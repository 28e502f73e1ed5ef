// Configuration of the Wan VAEs and their latent normalisation.
// - Wan2.2 (`wan/modules/vae2_2.py` `WanVAE_`, the defaults): z 48, encoder width 160, decoder
//   width 256, dim_mult 1,2,4,4, 2 residual blocks per stage, temporal downsampling at stages 1 and
//   2, pixel patchify 2 and the AvgDown3D/DupUp3D stage shortcuts: 4x16x16 compression.
// - Wan2.1 (`wan/modules/vae2_1.py`; Wan2.1 T2V and Wan2.2-A14B): z 16, width 96 for both coders,
//   the same stages without patchify or stage shortcuts, flat layer lists (`downsamples.{k}`),
//   decoder upsamples that halve the width: 4x8x8 compression.
// `tiny()` / `tiny21()` are small configs with the same topologies, for tests and the demo model.
#pragma once

#include <cstdint>
#include <vector>

namespace vidgraph::vae {

enum class VaeVersion { Wan21, Wan22 };

struct WanVaeConfig {
  VaeVersion version = VaeVersion::Wan22;
  int64_t z_dim = 48;
  int64_t encoder_dim = 160;
  int64_t decoder_dim = 256;
  std::vector<int64_t> dim_mult = {1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<bool> temporal_downsample = {false, true, true};
  // Latent normalisation: encode gives (mu - mean) / std, decode takes z * std + mean (per channel).
  std::vector<float> latent_mean;
  std::vector<float> latent_std;

  // The official Wan2.2 config with the 48 official mean/std values.
  static WanVaeConfig wan22();
  // A small Wan2.2 config with the same topology (z 8, widths 8): for tests and the demo model.
  static WanVaeConfig tiny();
  // The demo model's VAE: the official Wan2.2 topology and z 48 at small widths (channel
  // multipliers 1,2,2,2, one residual block per stage): ~2.5 M parameters, 5 MB in bf16.
  static WanVaeConfig demo();
  // The official Wan2.1 config (z 16, width 96) with its 16 official mean/std values.
  static WanVaeConfig wan21();
  // A small Wan2.1 config with the same topology (z 16, widths 8) and the official mean/std.
  static WanVaeConfig tiny21();

  // "Wan2.1" or "Wan2.2", for messages.
  const char* name() const { return version == VaeVersion::Wan21 ? "Wan2.1" : "Wan2.2"; }
  // Pixel patchify of the video (2 in Wan2.2, none = 1 in Wan2.1); the coders see 3 * p^2 channels.
  int64_t patch_size() const { return version == VaeVersion::Wan22 ? 2 : 1; }
  // Wan2.2's residual stages: nested keys (`downsamples.{s}.downsamples.{j}`) and AvgDown3D/DupUp3D
  // shortcuts; Wan2.1's stages are runs of a flat layer list without shortcut.
  bool residual_stages() const { return version == VaeVersion::Wan22; }
  int64_t spatial_factor() const;   // 16 for Wan2.2 (2 patchify x 2^3), 8 for Wan2.1
  int64_t temporal_factor() const;  // 4 for both official configs
  // Throws std::invalid_argument naming the inconsistent field.
  void validate() const;
};

// The official VAE whose latent a DiT with `latent_channels` (its out_dim) samples: Wan2.1's for 16
// (Wan2.1, Wan2.2-A14B), Wan2.2's otherwise (48; the tiny configs' 8).
WanVaeConfig vae_config_for_latent(int64_t latent_channels);

// The 48 official per-channel latent mean and std values (`Wan2_2_VAE.__init__`).
const std::vector<float>& wan22_latent_mean();
const std::vector<float>& wan22_latent_std();
// The 16 official Wan2.1 values (`Wan2_1_VAE.__init__`).
const std::vector<float>& wan21_latent_mean();
const std::vector<float>& wan21_latent_std();

}  // namespace vidgraph::vae
