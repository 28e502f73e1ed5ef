// Implements model_files.h: fixed candidate names per layout, first existing wins; the read lists
// are the checkpoint manifest's (model_io::model_part_files', the rule the loaders themselves follow).
#include "nodes/model/model_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "models/io/model_part_files.h"
#include "models/io/wan_dit_identity.h"
#include "nodes/input_file.h"
#include "nodes/model/model_folder_pick.h"

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
                 "vae.safetensors", "wan2.2_vae.safetensors", "Wan2.1_VAE.pth", "Wan2.1_VAE.safetensors"}};
const Part kTextEncoder{"text encoder", "text_encoder",
                        {"models_t5_umt5-xxl-enc-bf16.safetensors", "models_t5_umt5-xxl-enc-bf16.pth",
                         "text_encoder", "umt5_xxl_fp16.safetensors", "text_encoder.safetensors"}};
const Part kTokenizer{"tokenizer", "tokenizer",
                      {"google/umt5-xxl/spiece.model", "tokenizer/spiece.model", "spiece.model",
                       "tokenizer.model"}};
// The official A14B release: the high-noise expert is the DiT, its low-noise partner found beside it.
const Part kDit{"DiT", "dit", {"transformer", "high_noise_model", "."}};

bool usable(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// DiT: a folder whose own files (not a subfolder's) are Wan shards: an index json, or files named
// diffusion_pytorch_model*.
bool dit_folder(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;
  const model_io::ModelPartFiles files = model_io::model_part_files(model_io::ModelKind::Dit, p.string());
  if (files.folder != p.string()) return false;
  return !files.index.empty() ||
         std::any_of(files.weights.begin(), files.weights.end(), [](const std::string& w) {
           return fs::path(w).filename().string().rfind("diffusion_pytorch_model", 0) == 0;
         });
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

// The Part behind a manifest role, and its explicit param value in `given` (either expert: dit).
std::pair<const Part*, const std::string*> part_of(const std::string& role, const ModelFiles& given) {
  if (role == model_io::kRoleVae) return {&kVae, &given.vae};
  if (role == model_io::kRoleTextEncoder) return {&kTextEncoder, &given.text_encoder};
  return {&kDit, &given.dit};
}

// A sentence when `file` exists and is not a regular file, else "" (a missing file: the loader names it).
std::string special_file(const std::string& file, const Part& part, const std::string& explicit_path) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return {};
  const std::string param = explicit_path.empty() ? "model_path" : part.param;
  return std::string("The ") + part.what + " file '" + file + "' (through the " + param + " param) is " +
         file_kind_name(st.st_mode) + ", not a regular file; replace it with the weights file or set " + part.param +
         " to one.";
}

}  // namespace

engine::Result<ModelFiles> locate_model_files(const std::string& folder, ModelFiles given,
                                              const model_io::ModelFolders& folders) {
  std::error_code ec;
  if (!folder.empty() && !fs::is_directory(folder, ec)) {
    const std::string bad = check_utf8_param("model_path", folder);
    if (!bad.empty()) return engine::make_error(bad);
    return engine::make_error("Model folder '" + folder + "' does not exist or is not a folder; "
                              "download the Wan2.2 weights there or set model_path.");
  }
  struct Slot {
    std::string* value;
    const Part* part;
    std::optional<model_io::ModelKind> kind;  // what ComfyUI-style folders hold for it
  };
  for (Slot slot : {Slot{&given.dit, &kDit, model_io::ModelKind::Dit},
                    Slot{&given.vae, &kVae, model_io::ModelKind::Vae},
                    Slot{&given.text_encoder, &kTextEncoder, model_io::ModelKind::TextEncoder},
                    Slot{&given.tokenizer, &kTokenizer, std::nullopt}}) {
    if (!slot.value->empty()) {
      if (std::string bad = check_utf8_param(slot.part->param, *slot.value); !bad.empty()) {
        return engine::make_error(bad);
      }
      if (!usable(*slot.value)) {
        return engine::make_error(std::string(slot.part->what) + " path '" + *slot.value +
                                  "' does not exist; fix the " + slot.part->param + " param.");
      }
      const std::string bad = check_input_path(slot.part->param, *slot.value, InputKind::FileOrFolder,
                                               std::string("the ") + slot.part->what + " file or folder");
      if (!bad.empty()) return engine::make_error(bad);
      continue;
    }
    // ComfyUI's umT5 files carry their tokenizer; the loader reads it from there.
    const bool embedded = !slot.kind && carries_tokenizer(given.text_encoder);
    const bool in_folders = slot.kind && folders.folders.count(*slot.kind) > 0;
    std::optional<engine::Error> not_found;
    if (!folder.empty()) {
      auto found = find(folder, *slot.part);
      if (found.ok()) {
        *slot.value = *found;
        continue;
      }
      not_found = found.error();
    }
    if (embedded) continue;
    if (in_folders) {
      auto picked = pick_model_file(folders, *slot.kind, slot.part->param);
      if (!picked.ok()) return picked.error();
      *slot.value = *picked;
      continue;
    }
    if (not_found) return *not_found;
    return engine::make_error(std::string("No model folder and no ") + slot.part->param +
                              " path were given; set model_path (or " + slot.part->param + ").");
  }
  given.low_noise_dit = model_io::low_noise_partner(given.dit);
  return given;
}

engine::Result<ModelFiles> model_files_from_params(const nlohmann::json& params,
                                                   const engine::RunOptions& options) {
  auto path_of = [&](const char* name) {
    const std::string value = params.value(name, std::string());
    return value.empty() ? value : options.resolve_path(value);
  };
  ModelFiles given{path_of("dit"), path_of("vae"), path_of("text_encoder"), path_of("tokenizer"), {}};
  const std::string folder = path_of("model_path");
  std::error_code ec;
  auto folders = search_folders(fs::is_directory(folder, ec) ? folder : std::string(), path_of("model_paths_file"),
                                options.model_paths_file);
  if (!folders.ok()) return folders.error();
  return locate_model_files(folder, given, *folders);
}

std::shared_ptr<const model_io::CheckpointManifest> model_manifest(const ModelFiles& files) {
  return model_io::checkpoint_manifest(
      model_io::CheckpointPaths{files.dit, files.low_noise_dit, files.vae, files.text_encoder, files.tokenizer});
}

std::string check_model_read_files(const model_io::CheckpointManifest& manifest, const ModelFiles& given) {
  for (const model_io::ManifestPart& part : manifest.parts) {
    const auto [what, explicit_path] = part_of(part.role, given);
    for (const std::string& file : part.files.all()) {
      if (std::string bad = special_file(file, *what, *explicit_path); !bad.empty()) return bad;
    }
  }
  return manifest.tokenizer.empty() ? std::string() : special_file(manifest.tokenizer, kTokenizer, given.tokenizer);
}

}  // namespace vidgraph::nodes
