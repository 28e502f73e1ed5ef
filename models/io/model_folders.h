// Where users keep model files, as ComfyUI lays them out: a `models/` folder with one subfolder
// per kind (diffusion_models or unet, vae, text_encoders or clip, loras), and more roots listed in
// ComfyUI's extra_model_paths.yaml. Lists the weight files of each kind; model_file_info.h tells
// what each file holds.
// Contract: folders are listed recursively as ComfyUI lists them (symlinked folders followed, each
// real folder once); unreadable folders are skipped, never an error. The walk is bounded (ScanLimits:
// depth, weight files, folder entries looked at) and never enters /proc, /sys or /dev, so a
// `base_path: /` lists what it reaches within the bounds instead of walking the whole file system;
// what was skipped is said as notes (sentences) or spdlog warnings. Paths are returned sorted,
// as given (not canonicalised).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vidgraph::model_io {

enum class ModelKind { Dit, Vae, TextEncoder, Lora, LightVae };

// "diffusion_models", "vae", "text_encoders", "loras", "vae_approx" (ComfyUI's folder names; the
// light decoders such as TAEHV live in vae_approx).
const char* model_kind_folder(ModelKind kind);
// Inverse of model_kind_folder, also for ComfyUI's older names "unet" and "clip"; false for
// kinds Vidgraph does not use (checkpoints, controlnet, ...).
bool model_kind_from_folder(const std::string& name, ModelKind* kind);

// Real model folders hold a few hundred files a few levels deep; a big LoRA collection some thousands.
constexpr int kMaxScanDepth = 8;
constexpr size_t kMaxScanFiles = 10000;
constexpr size_t kMaxScanEntries = 200000;  // folder entries looked at per listing, files and folders
// extra_model_paths.yaml: real files are a few KB and list a handful of folders.
constexpr uint64_t kMaxModelPathsYamlBytes = 1024 * 1024;
constexpr size_t kMaxModelFolders = 4096;

struct ScanLimits {
  int depth = kMaxScanDepth;
  size_t files = kMaxScanFiles;
  size_t entries = kMaxScanEntries;
};

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
// std::runtime_error naming the file and the problem (missing, over kMaxModelPathsYamlBytes, not
// YAML, a kind that is not text, over kMaxModelFolders folders), or saying that this build has no
// YAML reader (built without yaml-cpp).
ModelFolders read_extra_model_paths(const std::string& yaml_path);

// The weight files (*.safetensors *.sft *.pth *.pt *.ckpt *.bin *.gguf) under each folder of
// `kind`, sorted per folder, folders in order. What the limits or the system-folder rule left out is
// appended to `notes` as sentences naming the folder, or logged as spdlog warnings when `notes` is null.
std::vector<std::string> list_model_files(const ModelFolders& folders, ModelKind kind,
                                          std::vector<std::string>* notes = nullptr, const ScanLimits& limits = {});

}  // namespace vidgraph::model_io
