// Implements wan_dit_identity.h: markers by name, sizes by the patch embedding and the head.
#include "models/io/wan_dit_identity.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace vidgraph::model_io {
namespace {

bool has_marker(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors, const char* marker) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& t) { return t.first.find(marker) != std::string::npos; });
}

const std::vector<int64_t>* shape_of(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                                     const std::string& suffix) {
  for (const auto& [name, shape] : tensors) {
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        (name.size() == suffix.size() || name[name.size() - suffix.size() - 1] == '.')) {
      return &shape;
    }
  }
  return nullptr;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// "high-noise expert" / "low-noise expert" named in `text`, or "".
std::string expert_named(const std::string& text) {
  const std::string p = lower(text);
  for (const char* high : {"high_noise", "highnoise", "high-noise"}) {
    if (p.find(high) != std::string::npos) return "high-noise expert";
  }
  for (const char* low : {"low_noise", "lownoise", "low-noise"}) {
    if (p.find(low) != std::string::npos) return "low-noise expert";
  }
  return "";
}

// "high-noise expert" / "low-noise expert" from the path, or "".
std::string expert_role(const std::string& path) {
  if (std::string named = expert_named(path); !named.empty()) return named;
  // diffusers' A14B repos: transformer/ runs the high-noise steps, transformer_2/ the low-noise ones.
  const std::filesystem::path folder = std::filesystem::path(path).lexically_normal();
  const std::string name = folder.filename().empty() ? folder.parent_path().filename().string()
                                                     : folder.filename().string();
  std::error_code ec;
  if (name == "transformer_2") return "low-noise expert";
  if (name == "transformer" && std::filesystem::is_directory(folder.parent_path() / "transformer_2", ec)) {
    return "high-noise expert";
  }
  return "";
}

}  // namespace

std::string low_noise_partner(const std::string& high_path) {
  const std::filesystem::path path = std::filesystem::path(high_path).lexically_normal();
  const std::filesystem::path self = path.filename().empty() ? path.parent_path() : path;
  const std::string name = self.filename().string();
  std::error_code ec;
  std::filesystem::path partner;
  if (name == "transformer") {
    partner = self.parent_path() / "transformer_2";
  } else {
    const std::string low = lower(name);
    for (const char* high : {"high_noise", "highnoise", "high-noise"}) {
      const size_t at = low.find(high);
      if (at == std::string::npos) continue;
      std::string other = name;
      other.replace(at, 4, name[at] == 'H' ? "Low" : "low");  // "high" -> "low", keeping the case users write
      partner = self.parent_path() / other;
      break;
    }
  }
  if (partner.empty() || !std::filesystem::exists(partner, ec)) return "";
  return partner.string();
}

WanDitIdentity identify_wan_dit(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                                const std::string& path) {
  WanDitIdentity out{"", "", "", 0, ""};
  const std::vector<int64_t>* patch = shape_of(tensors, "patch_embedding.weight");
  if (patch == nullptr || patch->size() != 5) return out;
  const int64_t dim = (*patch)[0];
  const int64_t in = (*patch)[1];
  const int64_t volume = (*patch)[2] * (*patch)[3] * (*patch)[4];
  const std::vector<int64_t>* head = shape_of(tensors, "head.head.weight");
  if (head == nullptr) head = shape_of(tensors, "proj_out.weight");  // diffusers
  out.latent_channels = head != nullptr && !head->empty() && volume > 0 ? (*head)[0] / volume : in;

  auto name = [&](const char* id, const char* model) {
    out.id = id;
    out.model = model;
  };
  auto refuse = [&](const char* id, const char* model, const std::string& why) {
    name(id, model);
    out.unsupported = why;
    return out;
  };
  if (has_marker(tensors, "vace_patch_embedding") || has_marker(tensors, "vace_blocks.")) {
    return refuse("wan-vace", "Wan VACE", "VACE (video editing with reference and control videos) is not supported");
  }
  if (has_marker(tensors, "casual_audio_encoder") || has_marker(tensors, "audio_injector")) {
    return refuse("wan2.2-s2v-14b", "Wan2.2-S2V-14B", "speech-to-video needs an audio encoder Vidgraph does not have");
  }
  if (has_marker(tensors, "pose_patch_embedding") || has_marker(tensors, "motion_encoder") ||
      has_marker(tensors, "face_encoder")) {
    return refuse("wan2.2-animate-14b", "Wan2.2-Animate-14B",
                  "character animation needs pose and face encoders Vidgraph does not have");
  }
  const bool clip_branch = has_marker(tensors, "img_emb.") || has_marker(tensors, "image_embedder.");
  if (clip_branch) {
    const bool flf = has_marker(tensors, "img_emb.emb_pos") || has_marker(tensors, "image_embedder.pos_embed");
    const std::string why = "it conditions on a CLIP image encoder, which Vidgraph does not have";
    return flf ? refuse("wan2.1-flf2v-14b", "Wan2.1-FLF2V-14B", why)
               : refuse(dim == 5120 ? "wan2.1-i2v-14b" : "wan2.1-i2v", dim == 5120 ? "Wan2.1-I2V-14B" : "Wan2.1-I2V",
                        why);
  }
  if (dim == 3072 && in == 48) {
    name("wan2.2-ti2v-5b", "Wan2.2-TI2V-5B");
  } else if (dim == 5120 && (in == 16 || in == 36)) {
    out.role = expert_role(path);
    if (in == 36) {
      name("wan2.2-i2v-a14b", "Wan2.2-I2V-A14B");
    } else if (out.role.empty()) {
      name("wan2.1-t2v-14b", "Wan2.1-T2V-14B");
    } else {
      name("wan2.2-t2v-a14b", "Wan2.2-T2V-A14B");
    }
  } else if (dim == 1536 && in == 16) {
    name("wan2.1-t2v-1.3b", "Wan2.1-T2V-1.3B");
  } else {
    out.role = expert_role(path);  // test-size experts: the path still names the role
    name("wan-dit", "a Wan DiT");
  }
  return out;
}

std::string wan_dit_description(const WanDitIdentity& identity) {
  return identity.model + (identity.role.empty() ? "" : " (" + identity.role + ")");
}

std::string expert_in_file_name(const std::string& path) {
  return expert_named(std::filesystem::path(path).filename().string());
}

std::string wan_lora_description(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                                 const std::string& path) {
  for (const auto& [stored, shape] : tensors) {
    const std::string name = lower(stored);
    const bool query = name.find("self_attn.q.") != std::string::npos ||
                       name.find("self_attn_q.") != std::string::npos || name.find("attn1.to_q.") != std::string::npos;
    const bool down = name.find("lora_down") != std::string::npos || name.find("lora_a") != std::string::npos;
    if (!query || !down || shape.size() != 2) continue;
    const int64_t dim = shape[1];
    const std::string model = dim == 3072 ? "Wan2.2-TI2V-5B"
                              : dim == 5120 ? "Wan2.2-A14B or Wan2.1-14B"
                              : dim == 1536 ? "Wan2.1-T2V-1.3B"
                                            : "a Wan DiT " + std::to_string(dim) + " wide";
    const std::string role = expert_in_file_name(path);
    return "LoRA for " + model + (role.empty() ? "" : " (" + role + ")");
  }
  return "";
}

}  // namespace vidgraph::model_io
