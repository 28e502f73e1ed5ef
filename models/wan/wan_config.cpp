#include "wan_config.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace vidgraph::wan {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    out += (i ? "," : "") + std::to_string(s[i]);
  }
  return out + "]";
}

const std::vector<int64_t>& require(const ShapeMap& shapes, const std::string& name, size_t rank) {
  auto it = shapes.find(name);
  if (it == shapes.end()) {
    throw std::runtime_error("Wan DiT checkpoint has no tensor '" + name +
                             "'; it is not a Wan2.x DiT or it is incomplete.");
  }
  if (it->second.size() != rank) {
    throw std::runtime_error("Wan DiT tensor '" + name + "' has shape " + shape_str(it->second) + ", expected rank " +
                             std::to_string(rank) + ".");
  }
  return it->second;
}

// Every detected size is checked before it divides or multiplies anything: a crafted checkpoint
// with a zero (or absurd) dimension must get an error, not SIGFPE or an overflowed product.
constexpr int64_t kMaxWidth = int64_t(1) << 20;  // Wan2.2-14B: dim 5120, ffn 13824
constexpr int64_t kMaxPatch = 64;                // Wan uses (1, 2, 2)

void require_dims(const std::string& name, const std::vector<int64_t>& shape, size_t from, size_t to, int64_t max) {
  for (size_t d = from; d < to; ++d) {
    if (shape[d] <= 0 || shape[d] > max) {
      throw std::runtime_error("Wan DiT tensor '" + name + "' has shape " + shape_str(shape) + ": dimension " +
                               std::to_string(d) + " must be in [1, " + std::to_string(max) +
                               "]; the file is not a valid Wan2.2 DiT checkpoint.");
    }
  }
}

int64_t count_blocks(const ShapeMap& shapes) {
  int64_t n = 0;
  while (shapes.count("blocks." + std::to_string(n) + ".modulation")) {
    ++n;
  }
  return n;
}

bool any_with_suffix(const ShapeMap& shapes, const std::string& suffix) {
  for (const auto& [name, shape] : shapes) {
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return true;
    }
  }
  return false;
}

template <typename T>
void read_if(const nlohmann::json& j, const char* key, T& out) {
  if (j.contains(key) && !j.at(key).is_null()) {
    try {
      out = j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
      throw std::invalid_argument("Invalid Wan DiT config: '" + std::string(key) + "' has the value " +
                                  j.at(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                                  " (a " + j.at(key).type_name() + "), which is not what the key holds in "
                                  "a Wan2.2 config.json; check the file.");
    }
  }
}

}  // namespace

void WanConfig::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("Invalid Wan DiT config: " + what + "."); };
  if (dim <= 0 || ffn_dim <= 0 || num_heads <= 0 || num_layers <= 0 || in_dim <= 0 || out_dim <= 0 || text_len <= 0 ||
      text_dim <= 0 || freq_dim <= 0) {
    fail("every size must be positive");
  }
  // Far above Wan2.2-5B/14B (dim 3072/5120, 30/40 layers, 512 text tokens): a config past these is
  // not a real model, and its sizes would overflow the shape products below.
  constexpr int64_t kMaxWidth = int64_t(1) << 16;
  if (dim > kMaxWidth || ffn_dim > 4 * kMaxWidth || num_heads > dim || num_layers > 1024 || in_dim > 4096 ||
      out_dim > 4096 || text_len > 65536 || text_dim > kMaxWidth || freq_dim > kMaxWidth) {
    fail("a size is beyond any Wan model (dim " + std::to_string(dim) + ", ffn_dim " + std::to_string(ffn_dim) +
         ", num_heads " + std::to_string(num_heads) + ", num_layers " + std::to_string(num_layers) +
         ", text_len " + std::to_string(text_len) + ")");
  }
  if (dim % num_heads != 0) {
    fail("dim " + std::to_string(dim) + " is not divisible by num_heads " + std::to_string(num_heads));
  }
  if (head_dim() % 2 != 0 || head_dim() < 6) {
    fail("head_dim " + std::to_string(head_dim()) + " must be even and >= 6 for the 3D RoPE split");
  }
  if (freq_dim % 2 != 0) {
    fail("freq_dim must be even");
  }
  for (int64_t p : patch_size) {
    if (p <= 0) {
      fail("patch sizes must be positive");
    }
  }
}

WanConfig WanConfig::detect_from_weights(const ShapeMap& shapes, const nlohmann::json* hint) {
  WanConfig c = hint ? from_json(*hint) : WanConfig{};
  const auto& patch = require(shapes, "patch_embedding.weight", 5);
  require_dims("patch_embedding.weight", patch, 0, 2, kMaxWidth);
  require_dims("patch_embedding.weight", patch, 2, 5, kMaxPatch);
  c.dim = patch[0];
  c.in_dim = patch[1];
  c.patch_size = {patch[2], patch[3], patch[4]};
  const auto& text = require(shapes, "text_embedding.0.weight", 2);
  const auto& time = require(shapes, "time_embedding.0.weight", 2);
  require_dims("text_embedding.0.weight", text, 0, 2, kMaxWidth);
  require_dims("time_embedding.0.weight", time, 0, 2, kMaxWidth);
  c.text_dim = text[1];
  c.freq_dim = time[1];
  c.num_layers = count_blocks(shapes);
  if (c.num_layers == 0) {
    throw std::runtime_error("Wan DiT checkpoint has no 'blocks.0.modulation'; it is not a Wan2.x DiT.");
  }
  const auto& ffn = require(shapes, "blocks.0.ffn.0.weight", 2);
  require_dims("blocks.0.ffn.0.weight", ffn, 0, 2, kMaxWidth);
  c.ffn_dim = ffn[0];
  const auto& head = require(shapes, "head.head.weight", 2);
  require_dims("head.head.weight", head, 0, 2, kMaxWidth * kMaxPatch * kMaxPatch * kMaxPatch);
  if (head[0] % c.patch_volume() != 0) {
    throw std::runtime_error("Wan DiT tensor 'head.head.weight' has shape " + shape_str(head) +
                             ", whose rows are not a multiple of the patch volume " + std::to_string(c.patch_volume()) +
                             ".");
  }
  c.out_dim = head[0] / c.patch_volume();
  c.with_gate_compress = any_with_suffix(shapes, ".self_attn.to_gate_compress.weight");
  c.with_proj_l = any_with_suffix(shapes, ".self_attn.proj_l.weight");
  bool heads_known = hint && (hint->contains("num_heads") || hint->contains("num_attention_heads"));
  if (c.with_proj_l) {
    for (const auto& [name, shape] : shapes) {
      if (name.find(".self_attn.proj_l.weight") != std::string::npos && !shape.empty() && shape[0] > 0 &&
          c.dim % shape[0] == 0) {
        c.num_heads = c.dim / shape[0];
        heads_known = true;
        break;
      }
    }
  }
  if (!heads_known) {
    if (c.dim % 128 != 0) {
      throw std::runtime_error("Cannot tell the number of heads of this Wan DiT (dim " + std::to_string(c.dim) +
                               " is not a multiple of 128); put its config.json beside the weights.");
    }
    c.num_heads = c.dim / 128;
  }
  c.validate();
  return c;
}

nlohmann::json WanConfig::to_json() const {
  return nlohmann::json{{"_class_name", "WanModel"},
                        {"dim", dim},
                        {"eps", eps},
                        {"ffn_dim", ffn_dim},
                        {"freq_dim", freq_dim},
                        {"in_dim", in_dim},
                        {"model_type", "ti2v"},
                        {"num_heads", num_heads},
                        {"num_layers", num_layers},
                        {"out_dim", out_dim},
                        {"text_len", text_len},
                        {"text_dim", text_dim},
                        {"patch_size", patch_size},
                        {"vidgraph_with_gate_compress", with_gate_compress},
                        {"vidgraph_with_proj_l", with_proj_l}};
}

WanConfig WanConfig::from_json(const nlohmann::json& j) {
  WanConfig c;
  // Official keys.
  read_if(j, "dim", c.dim);
  read_if(j, "ffn_dim", c.ffn_dim);
  read_if(j, "num_heads", c.num_heads);
  read_if(j, "num_layers", c.num_layers);
  read_if(j, "in_dim", c.in_dim);
  read_if(j, "out_dim", c.out_dim);
  read_if(j, "text_len", c.text_len);
  read_if(j, "text_dim", c.text_dim);
  read_if(j, "freq_dim", c.freq_dim);
  read_if(j, "eps", c.eps);
  read_if(j, "patch_size", c.patch_size);
  read_if(j, "vidgraph_with_gate_compress", c.with_gate_compress);
  read_if(j, "vidgraph_with_proj_l", c.with_proj_l);
  // Diffusers transformer keys.
  if (j.contains("num_attention_heads")) {
    read_if(j, "num_attention_heads", c.num_heads);
    int64_t head_dim = 0;
    read_if(j, "attention_head_dim", head_dim);
    if (head_dim > 0) {
      c.dim = head_dim * c.num_heads;
    }
  }
  read_if(j, "in_channels", c.in_dim);
  read_if(j, "out_channels", c.out_dim);
  return c;
}

ShapeMap WanConfig::parameter_shapes() const {
  const int64_t d = dim;
  ShapeMap s;
  s["patch_embedding.weight"] = {d, in_dim, patch_size[0], patch_size[1], patch_size[2]};
  s["patch_embedding.bias"] = {d};
  s["text_embedding.0.weight"] = {d, text_dim};
  s["text_embedding.0.bias"] = {d};
  s["text_embedding.2.weight"] = {d, d};
  s["text_embedding.2.bias"] = {d};
  s["time_embedding.0.weight"] = {d, freq_dim};
  s["time_embedding.0.bias"] = {d};
  s["time_embedding.2.weight"] = {d, d};
  s["time_embedding.2.bias"] = {d};
  s["time_projection.1.weight"] = {6 * d, d};
  s["time_projection.1.bias"] = {6 * d};
  for (int64_t i = 0; i < num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    s[b + "modulation"] = {1, 6, d};
    for (const char* attn : {"self_attn.", "cross_attn."}) {
      for (const char* lin : {"q", "k", "v", "o"}) {
        s[b + attn + lin + ".weight"] = {d, d};
        s[b + attn + lin + ".bias"] = {d};
      }
      s[b + attn + "norm_q.weight"] = {d};
      s[b + attn + "norm_k.weight"] = {d};
    }
    if (with_gate_compress) {
      s[b + "self_attn.to_gate_compress.weight"] = {d, d};
      s[b + "self_attn.to_gate_compress.bias"] = {d};
    }
    if (with_proj_l) {
      s[b + "self_attn.proj_l.weight"] = {head_dim(), head_dim()};
      s[b + "self_attn.proj_l.bias"] = {head_dim()};
    }
    s[b + "norm3.weight"] = {d};
    s[b + "norm3.bias"] = {d};
    s[b + "ffn.0.weight"] = {ffn_dim, d};
    s[b + "ffn.0.bias"] = {ffn_dim};
    s[b + "ffn.2.weight"] = {d, ffn_dim};
    s[b + "ffn.2.bias"] = {d};
  }
  s["head.modulation"] = {1, 2, d};
  s["head.head.weight"] = {out_dim * patch_volume(), d};
  s["head.head.bias"] = {out_dim * patch_volume()};
  return s;
}

bool operator==(const WanConfig& a, const WanConfig& b) {
  return a.dim == b.dim && a.ffn_dim == b.ffn_dim && a.num_heads == b.num_heads && a.num_layers == b.num_layers &&
         a.in_dim == b.in_dim && a.out_dim == b.out_dim && a.patch_size == b.patch_size && a.text_len == b.text_len &&
         a.text_dim == b.text_dim && a.freq_dim == b.freq_dim && a.eps == b.eps && a.rope_theta == b.rope_theta &&
         a.with_gate_compress == b.with_gate_compress && a.with_proj_l == b.with_proj_l;
}

const std::string& default_negative_prompt() {
  static const std::string text =
      "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，"
      "低质量，JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，"
      "毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走";
  return text;
}

}  // namespace vidgraph::wan
