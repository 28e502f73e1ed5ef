#include "vae_config.h"

#include <stdexcept>
#include <string>

namespace vidgraph::vae {

const std::vector<float>& wan22_latent_mean() {
  static const std::vector<float> mean = {
      -0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f,  0.1838f,  0.1557f,  -0.1382f, 0.0542f,
      0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f, -0.2246f, -0.1207f, -0.0698f, 0.5109f,
      0.2665f,  -0.2108f, -0.2158f, 0.2502f,  -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,
      -0.2799f, -0.1230f, -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
      0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f};
  return mean;
}

const std::vector<float>& wan22_latent_std() {
  static const std::vector<float> std_ = {
      0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f, 0.5894f, 1.0901f,
      0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f, 0.5833f, 1.4146f, 0.8986f, 0.5659f,
      0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f, 0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f,
      0.5726f, 1.2042f, 0.5458f, 1.6887f, 0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f};
  return std_;
}

const std::vector<float>& wan21_latent_mean() {
  static const std::vector<float> mean = {-0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,
                                          -0.1517f, 1.5508f,  0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                          -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
  return mean;
}

const std::vector<float>& wan21_latent_std() {
  static const std::vector<float> std_ = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f,
                                          3.2687f, 2.1526f, 2.8652f, 1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f};
  return std_;
}

WanVaeConfig WanVaeConfig::wan22() {
  WanVaeConfig c;
  c.latent_mean = wan22_latent_mean();
  c.latent_std = wan22_latent_std();
  return c;
}

WanVaeConfig WanVaeConfig::tiny() {
  WanVaeConfig c;
  c.z_dim = 8;
  c.encoder_dim = 8;
  c.decoder_dim = 8;
  c.latent_mean.assign(wan22_latent_mean().begin(), wan22_latent_mean().begin() + c.z_dim);
  c.latent_std.assign(wan22_latent_std().begin(), wan22_latent_std().begin() + c.z_dim);
  return c;
}

WanVaeConfig WanVaeConfig::demo() {
  WanVaeConfig c = wan22();
  c.encoder_dim = 16;
  c.decoder_dim = 32;
  c.dim_mult = {1, 2, 2, 2};
  c.num_res_blocks = 1;
  return c;
}

WanVaeConfig WanVaeConfig::wan21() {
  WanVaeConfig c;
  c.version = VaeVersion::Wan21;
  c.z_dim = 16;
  c.encoder_dim = 96;
  c.decoder_dim = 96;
  c.latent_mean = wan21_latent_mean();
  c.latent_std = wan21_latent_std();
  return c;
}

WanVaeConfig WanVaeConfig::tiny21() {
  WanVaeConfig c = wan21();
  c.encoder_dim = 8;
  c.decoder_dim = 8;
  return c;
}

WanVaeConfig vae_config_for_latent(int64_t latent_channels) {
  return latent_channels == 16 ? WanVaeConfig::wan21() : WanVaeConfig::wan22();
}

int64_t WanVaeConfig::spatial_factor() const {
  int64_t f = patch_size();
  for (size_t i = 0; i + 1 < dim_mult.size(); ++i) {
    f *= 2;
  }
  return f;
}

int64_t WanVaeConfig::temporal_factor() const {
  int64_t f = 1;
  for (size_t i = 0; i + 1 < dim_mult.size() && i < temporal_downsample.size(); ++i) {
    f *= temporal_downsample[i] ? 2 : 1;
  }
  return f;
}

void WanVaeConfig::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("invalid VAE config: " + what); };
  if (z_dim <= 0 || encoder_dim <= 0 || decoder_dim <= 0 || num_res_blocks <= 0) {
    bad("z_dim, encoder_dim, decoder_dim and num_res_blocks must be positive");
  }
  if (dim_mult.size() < 2) {
    bad("dim_mult needs at least two stages");
  }
  if (int64_t(latent_mean.size()) != z_dim || int64_t(latent_std.size()) != z_dim) {
    bad("latent_mean and latent_std need z_dim = " + std::to_string(z_dim) + " values each");
  }
  if (version == VaeVersion::Wan21 && decoder_dim % 2 != 0) {
    bad("a Wan2.1 decoder width must be even (its upsamples halve it)");
  }
  for (float s : latent_std) {
    if (!(s > 0.0f)) {
      bad("latent_std values must be positive");
    }
  }
}

}  // namespace vidgraph::vae
