// Where users keep model files, as ComfyUI lays them out: a `models/` folder with one subfolder
// per kind (diffusion_models or unet, vae, text_encoders or clip, loras), and more roots listed in
// ComfyUI's extra_model_paths.yaml. Lists the weight files of each kind; model_file_info.h tells
// what each file holds.
// Contract: folders are listed recursively as ComfyUI lists them (symlinked folders followed, each
// real folder once, at most kMaxScanDepth levels and kMaxScanFiles files per kind); unreadable
// folders are skipped, never an error. Paths are returned sorted, as given (not canonicalised).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace vidgraph::model_io {

enum class ModelKind { Dit, Vae, TextEncoder, Lora };

// "diffusion_models", "vae", "text_encoders", "loras" (ComfyUI's folder names).
const char* model_kind_folder(ModelKind kind);
// Inverse of model_kind_folder, also for ComfyUI's older names "unet" and "clip"; false for
// kinds Vidgraph does not use (checkpoints, controlnet, ...).
bool model_kind_from_folder(const std::string& name, ModelKind* kind);

constexpr int kMaxScanDepth = 8;
constexpr size_t kMaxScanFiles = 10000;

// The folders of each kind, in search order (first listed first).
struct ModelFolders {
  std::map<ModelKind, std::vector<std::string>> folders;
  bool empty() const;
  void add(ModelKind kind, const std::string& folder);  // once per folder
  void add(const ModelFolders& more);
};

// True when `dir` has at least one of ComfyUI's model subfolders above.
bool is_comfy_models_folder(const std::string& dir);
// The existing kind subfolders of a ComfyUI `models/` folder (`ComfyUI/models`); the ComfyUI
// install folder itself works too (its models/ is used).
ModelFolders comfy_model_folders(const std::string& dir);

// ComfyUI's extra_model_paths.yaml: top-level sections, each with an optional `base_path` (~ and
// $VARS expanded; relative to the yaml file's folder) and per-kind folders relative to it, one or
// several (a `|` block, one folder a line). Unknown kinds and `is_default` are ignored. Throws
// std::runtime_error naming the file and the problem (missing, not YAML, a kind that is not text),
// or saying that this build has no YAML reader (built without yaml-cpp).
ModelFolders read_extra_model_paths(const std::string& yaml_path);

// The weight files (*.safetensors *.sft *.pth *.pt *.ckpt *.bin *.gguf) under each folder of
// `kind`, sorted per folder, folders in order.
std::vector<std::string> list_model_files(const ModelFolders& folders, ModelKind kind);

}  // namespace vidgraph::model_io
