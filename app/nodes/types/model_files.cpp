// Implements model_files.h: fixed candidate names per layout, first existing wins; the read lists
// mirror the loaders' own choices (wan_checkpoint.cpp, vae_checkpoint.cpp, umt5_checkpoint.cpp).
#include "nodes/types/model_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "nodes/input_file.h"
#include "nodes/types/model_folder_pick.h"

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

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Names of the top-level entries of `dir` (one readdir pass, no stat; unreadable folders give none).
std::vector<std::string> entry_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// DiT: the folder itself when it holds an index json or config.json next to safetensors.
bool dit_folder(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return false;
  for (const std::string& name : entry_names(p)) {
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

// The shard names of a DiT index json; empty when it cannot be parsed (the loader reports that).
std::set<std::string> index_shards(const fs::path& index) {
  std::set<std::string> shards;
  std::error_code ec;
  if (!fs::is_regular_file(index, ec) || fs::file_size(index, ec) > (std::uintmax_t(64) << 20)) {
    return shards;
  }
  std::ifstream in(index);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object()) return shards;
  for (const auto& item : json["weight_map"].items()) {
    if (item.value().is_string()) shards.insert(item.value().get<std::string>());
  }
  return shards;
}

// wan_checkpoint.cpp: a folder without top-level *.safetensors reads transformer/; the index json
// (first by name) names the shards, else every *.safetensors is one; config.json is a hint.
std::vector<std::string> dit_files(const fs::path& path) {
  std::vector<std::string> names = entry_names(path);
  auto has_shards = [](const std::vector<std::string>& n) {
    return std::any_of(n.begin(), n.end(), [](const std::string& s) { return ends_with(s, ".safetensors"); });
  };
  fs::path dir = path;
  std::error_code ec;
  if (!has_shards(names) && fs::is_directory(path / "transformer", ec)) {
    dir = path / "transformer";
    names = entry_names(dir);
  }
  std::vector<std::string> out;
  std::vector<std::string> shards;
  std::string index;
  for (const std::string& name : names) {
    if (ends_with(name, ".safetensors.index.json") && index.empty()) index = name;
    if (ends_with(name, ".safetensors")) shards.push_back(name);
    if (name == "config.json") out.push_back((dir / name).string());
  }
  if (!index.empty()) {
    out.push_back((dir / index).string());
    const std::set<std::string> named = index_shards(dir / index);
    if (!named.empty()) shards.assign(named.begin(), named.end());
  }
  for (const std::string& shard : shards) out.push_back((dir / shard).string());
  return out;
}

// The first of `subs` under `dir` that exists (the loaders' order).
std::vector<std::string> first_of(const fs::path& dir, std::initializer_list<const char*> subs) {
  for (const char* sub : subs) {
    if (usable(dir / sub)) return {(dir / sub).string()};
  }
  return {};
}

std::vector<std::string> text_encoder_files(const fs::path& path) {
  std::error_code ec;
  const fs::path dir = fs::is_directory(path / "text_encoder", ec) ? path / "text_encoder" : path;
  std::vector<std::string> out;
  for (const std::string& name : entry_names(dir)) {
    if (fs::path(name).extension() == ".safetensors") out.push_back((dir / name).string());
  }
  return out;
}

enum class Which { Dit, Vae, TextEncoder, Tokenizer };

std::vector<std::string> part_files(const std::string& path, Which which) {
  std::error_code ec;
  if (path.empty()) return {};
  if (!fs::is_directory(path, ec)) return {path};
  switch (which) {
    case Which::Dit: return dit_files(path);
    case Which::Vae:
      return first_of(path, {"vae/diffusion_pytorch_model.safetensors", "diffusion_pytorch_model.safetensors"});
    case Which::TextEncoder: return text_encoder_files(path);
    case Which::Tokenizer:
      return first_of(path, {"spiece.model", "tokenizer/spiece.model", "google/umt5-xxl/spiece.model"});
  }
  return {};
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
  return given;
}

engine::Result<ModelFiles> model_files_from_params(const nlohmann::json& params,
                                                   const engine::RunOptions& options) {
  auto path_of = [&](const char* name) {
    const std::string value = params.value(name, std::string());
    return value.empty() ? value : options.resolve_path(value);
  };
  ModelFiles given{path_of("dit"), path_of("vae"), path_of("text_encoder"), path_of("tokenizer")};
  const std::string folder = path_of("model_path");
  std::error_code ec;
  auto folders = search_folders(fs::is_directory(folder, ec) ? folder : std::string(), path_of("model_paths_file"));
  if (!folders.ok()) return folders.error();
  return locate_model_files(folder, given, *folders);
}

std::vector<std::string> model_read_files(const ModelFiles& files) {
  std::vector<std::string> out;
  for (const auto& [path, which] : {std::pair{&files.dit, Which::Dit}, std::pair{&files.vae, Which::Vae},
                                    std::pair{&files.text_encoder, Which::TextEncoder},
                                    std::pair{&files.tokenizer, Which::Tokenizer}}) {
    const std::vector<std::string> part = part_files(*path, which);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::string check_model_read_files(const ModelFiles& files, const ModelFiles& given) {
  for (const auto& [path, explicit_path, part, which] :
       {std::tuple{&files.dit, &given.dit, &kDit, Which::Dit},
        std::tuple{&files.vae, &given.vae, &kVae, Which::Vae},
        std::tuple{&files.text_encoder, &given.text_encoder, &kTextEncoder, Which::TextEncoder},
        std::tuple{&files.tokenizer, &given.tokenizer, &kTokenizer, Which::Tokenizer}}) {
    const std::string param = explicit_path->empty() ? "model_path" : part->param;
    for (const std::string& file : part_files(*path, which)) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0) continue;  // missing: the loader names it
      if (S_ISREG(st.st_mode)) continue;
      return std::string("The ") + part->what + " file '" + file + "' (through the " + param +
             " param) is " + file_kind_name(st.st_mode) + ", not a regular file; replace it with " +
             "the weights file or set " + part->param + " to one.";
    }
  }
  return {};
}

}  // namespace vidgraph::nodes
