// Configuration of the Wan2.2 VAE (`wan/modules/vae2_2.py` `WanVAE_`) and its latent normalisation.
// Defaults are the official TI2V-5B values (z 48, encoder width 160, decoder width 256, dim_mult
// 1,2,4,4, 2 residual blocks per stage, temporal downsampling at stages 1 and 2, 4x16x16
// compression); `tiny()` is a small config for tests and the demo model with the same topology.
#pragma once

#include <cstdint>
#include <vector>

namespace vidgraph::vae {

struct WanVaeConfig {
  int64_t z_dim = 48;
  int64_t encoder_dim = 160;
  int64_t decoder_dim = 256;
  std::vector<int64_t> dim_mult = {1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<bool> temporal_downsample = {false, true, true};
  // Latent normalisation: encode gives (mu - mean) / std, decode takes z * std + mean (per channel).
  std::vector<float> latent_mean;
  std::vector<float> latent_std;

  // The official config with the 48 official mean/std values.
  static WanVaeConfig wan22();
  // A small config with the same topology (z 8, widths 8/16): for tests and the demo model.
  static WanVaeConfig tiny();

  int64_t spatial_factor() const;   // 16 for the official config (2 patchify x 2^3)
  int64_t temporal_factor() const;  // 4 for the official config
  // Throws std::invalid_argument naming the inconsistent field.
  void validate() const;
};

// The 48 official per-channel latent mean and std values (`Wan2_2_VAE.__init__`).
const std::vector<float>& wan22_latent_mean();
const std::vector<float>& wan22_latent_std();

}  // namespace vidgraph::vae
