// Implements model_files.h: fixed candidate names per layout, first existing wins.
#include "nodes/types/model_files.h"

#include <filesystem>
#include <vector>

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

struct Part {
  const char* what;   // "VAE"
  const char* param;  // "vae"
  std::vector<const char*> candidates;
};

const Part kVae{"VAE", "vae",
                {"Wan2.2_VAE.safetensors", "Wan2.2_VAE.pth", "vae/diffusion_pytorch_model.safetensors",
                 "vae.safetensors", "wan2.2_vae.safetensors"}};
const Part kTextEncoder{"text encoder", "text_encoder",
                        {"models_t5_umt5-xxl-enc-bf16.safetensors", "models_t5_umt5-xxl-enc-bf16.pth",
                         "text_encoder", "umt5_xxl_fp16.safetensors", "text_encoder.safetensors"}};
const Part kTokenizer{"tokenizer", "tokenizer",
                      {"google/umt5-xxl/spiece.model", "tokenizer/spiece.model", "spiece.model",
                       "tokenizer.model"}};
const Part kDit{"DiT", "dit", {"transformer", "."}};

bool usable(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// DiT: the folder itself when it holds an index json or config.json next to safetensors.
bool dit_folder(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;
  for (const auto& entry : fs::directory_iterator(p, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".safetensors.index.json") != std::string::npos) return true;
    if (name.rfind("diffusion_pytorch_model", 0) == 0) return true;
  }
  return false;
}

engine::Result<std::string> find(const fs::path& folder, const Part& part) {
  std::string looked;
  for (const char* candidate : part.candidates) {
    const fs::path p = std::string(candidate) == "." ? folder : folder / candidate;
    const bool ok = part.param == std::string("dit") ? dit_folder(p) : usable(p);
    if (ok) return p.lexically_normal().string();
    looked += std::string(looked.empty() ? "" : ", ") + candidate;
  }
  return engine::make_error("No " + std::string(part.what) + " found in '" + folder.string() +
                            "' (looked for " + looked + "); set the " + part.param +
                            " param to its file.");
}

}  // namespace

engine::Result<ModelFiles> locate_model_files(const std::string& folder, ModelFiles given) {
  std::error_code ec;
  if (!folder.empty() && !fs::is_directory(folder, ec)) {
    return engine::make_error("Model folder '" + folder + "' does not exist or is not a folder; "
                              "download the Wan2.2 weights there or set model_path.");
  }
  struct Slot {
    std::string* value;
    const Part* part;
  };
  for (Slot slot : {Slot{&given.dit, &kDit}, Slot{&given.vae, &kVae},
                    Slot{&given.text_encoder, &kTextEncoder}, Slot{&given.tokenizer, &kTokenizer}}) {
    if (!slot.value->empty()) {
      if (!usable(*slot.value)) {
        return engine::make_error(std::string(slot.part->what) + " path '" + *slot.value +
                                  "' does not exist; fix the " + slot.part->param + " param.");
      }
      continue;
    }
    if (folder.empty()) {
      return engine::make_error(std::string("No model folder and no ") + slot.part->param +
                                " path were given; set model_path (or " + slot.part->param + ").");
    }
    auto found = find(folder, *slot.part);
    if (!found.ok()) return found.error();
    *slot.value = *found;
  }
  return given;
}

}  // namespace vidgraph::nodes
