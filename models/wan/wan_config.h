// WanConfig: the hyper-parameters of a Wan2.x DiT. Defaults are Wan2.2-TI2V-5B
// (wan/configs/wan_ti2v_5B.py); `detect_from_weights` derives a config from tensor shapes keyed by
// the official (canonical) parameter names, with an optional config.json as a hint for what shapes
// cannot say (the number of heads, text_len). Everything is plain data: no tensors here.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vidgraph::wan {

using ShapeMap = std::map<std::string, std::vector<int64_t>>;

struct WanConfig {
  int64_t dim = 3072;
  int64_t ffn_dim = 14336;
  int64_t num_heads = 24;
  int64_t num_layers = 30;
  int64_t in_dim = 48;
  int64_t out_dim = 48;
  std::array<int64_t, 3> patch_size{1, 2, 2};  // (t, h, w)
  int64_t text_len = 512;
  int64_t text_dim = 4096;
  int64_t freq_dim = 256;
  double eps = 1e-6;
  double rope_theta = 10000.0;
  // Sparse-attention extras per self-attention: `to_gate_compress` Linear(dim, dim) (VSA gate)
  // and `proj_l` Linear(head_dim, head_dim) (SLA* linear branch). Absent = zero.
  bool with_gate_compress = false;
  bool with_proj_l = false;

  int64_t head_dim() const { return dim / num_heads; }
  // Channels of image conditioning the DiT takes beside its latent: Wan2.2-I2V-A14B 20 (mask and
  // image latent), every other Wan DiT 0.
  int64_t condition_channels() const { return in_dim - out_dim; }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }

  // The Wan2.2-TI2V-5B config (the defaults above).
  static WanConfig ti2v_5b() { return WanConfig{}; }
  // One expert of Wan2.2-T2V-A14B (wan/configs/wan_t2v_A14B.py; Wan2.1 T2V 14B has the same DiT):
  // dim 5120, FFN 13824, 40 heads, 40 layers, 16 latent channels in and out.
  static WanConfig t2v_a14b() {
    WanConfig c;
    c.dim = 5120;
    c.ffn_dim = 13824;
    c.num_heads = 40;
    c.num_layers = 40;
    c.in_dim = c.out_dim = 16;
    return c;
  }

  // Wan2.1-T2V-1.3B (the Wan2.1 repo's t2v_1.3B config): dim 1536, FFN 8960, 12 heads, 30 layers,
  // 16 latent channels in and out. (Wan2.1-T2V-14B is t2v_a14b()'s network.)
  static WanConfig t2v_1_3b() {
    WanConfig c;
    c.dim = 1536;
    c.ffn_dim = 8960;
    c.num_heads = 12;
    c.num_layers = 30;
    c.in_dim = c.out_dim = 16;
    return c;
  }

  // Throws std::invalid_argument naming the field when the config is not self-consistent
  // (dim not divisible by heads, head_dim odd or too small for the 3D RoPE split, ...).
  void validate() const;

  // Derives the config from shapes keyed by canonical names (`patch_embedding.weight`,
  // `blocks.0.ffn.0.weight`, ...). `hint` (may be null) is an official or diffusers config.json;
  // its num_heads/text_len/eps are used, and its dims must agree with the shapes. Without a
  // head count from the hint or a `proj_l`, head_dim 128 is assumed (every released Wan model).
  // Throws std::runtime_error naming the missing or inconsistent tensor.
  static WanConfig detect_from_weights(const ShapeMap& shapes, const nlohmann::json* hint);

  // Official config.json form ({"dim":..,"num_heads":..,...}) plus our extras.
  nlohmann::json to_json() const;
  // Accepts the official keys and the diffusers transformer keys.
  static WanConfig from_json(const nlohmann::json& j);

  // Shape of every canonical parameter this config has, in module order.
  ShapeMap parameter_shapes() const;
};

bool operator==(const WanConfig& a, const WanConfig& b);
inline bool operator!=(const WanConfig& a, const WanConfig& b) {
  return !(a == b);
}

// The Wan2.2 reference's default negative prompt (shared_config.sample_neg_prompt): what the
// sampler guides away from, and what the demo model's caption dropout trains on.
const std::string& default_negative_prompt();

}  // namespace vidgraph::wan
