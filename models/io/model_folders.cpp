// Implements model_folders.h except read_extra_model_paths (model_paths_yaml.cpp).
#include "model_folders.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

namespace vidgraph::model_io {

namespace fs = std::filesystem;

namespace {

struct FolderName {
  const char* name;
  ModelKind kind;
};

// Current names first: they are the ones model_kind_folder returns.
const FolderName kFolderNames[] = {{"diffusion_models", ModelKind::Dit}, {"unet", ModelKind::Dit},
                                   {"vae", ModelKind::Vae},              {"text_encoders", ModelKind::TextEncoder},
                                   {"clip", ModelKind::TextEncoder},     {"loras", ModelKind::Lora}};

bool weight_extension(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".safetensors", ".sft", ".pth", ".pt", ".ckpt", ".bin", ".gguf"};
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return kExtensions.count(ext) > 0;
}

void scan(const fs::path& dir, int depth, std::set<fs::path>& seen, std::vector<std::string>& out) {
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (ec || !seen.insert(real).second || depth > kMaxScanDepth) return;
  std::vector<fs::path> files, subdirs;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code kind_ec;
    if (it->is_directory(kind_ec)) {
      subdirs.push_back(it->path());
    } else if (it->is_regular_file(kind_ec) && weight_extension(it->path())) {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  std::sort(subdirs.begin(), subdirs.end());
  for (const fs::path& f : files) {
    if (out.size() >= kMaxScanFiles) return;
    out.push_back(f.string());
  }
  for (const fs::path& d : subdirs) scan(d, depth + 1, seen, out);
}

}  // namespace

const char* model_kind_folder(ModelKind kind) {
  for (const FolderName& f : kFolderNames) {
    if (f.kind == kind) return f.name;
  }
  return "";
}

bool model_kind_from_folder(const std::string& name, ModelKind* kind) {
  for (const FolderName& f : kFolderNames) {
    if (name == f.name) {
      *kind = f.kind;
      return true;
    }
  }
  return false;
}

bool ModelFolders::empty() const {
  return std::all_of(folders.begin(), folders.end(), [](const auto& kv) { return kv.second.empty(); });
}

void ModelFolders::add(ModelKind kind, const std::string& folder) {
  std::vector<std::string>& list = folders[kind];
  if (std::find(list.begin(), list.end(), folder) == list.end()) list.push_back(folder);
}

void ModelFolders::add(const ModelFolders& more) {
  for (const auto& [kind, list] : more.folders) {
    for (const std::string& folder : list) add(kind, folder);
  }
}

bool is_comfy_models_folder(const std::string& dir) {
  std::error_code ec;
  return std::any_of(std::begin(kFolderNames), std::end(kFolderNames),
                     [&](const FolderName& f) { return fs::is_directory(fs::path(dir) / f.name, ec); });
}

ModelFolders comfy_model_folders(const std::string& dir) {
  fs::path root = dir;
  std::error_code ec;
  if (!is_comfy_models_folder(dir) && is_comfy_models_folder((root / "models").string())) root /= "models";
  ModelFolders out;
  for (const FolderName& f : kFolderNames) {
    if (fs::is_directory(root / f.name, ec)) out.add(f.kind, (root / f.name).lexically_normal().string());
  }
  return out;
}

std::vector<std::string> list_model_files(const ModelFolders& folders, ModelKind kind) {
  std::vector<std::string> out;
  const auto it = folders.folders.find(kind);
  if (it == folders.folders.end()) return out;
  std::set<fs::path> seen;
  for (const std::string& folder : it->second) scan(folder, 0, seen, out);
  return out;
}

}  // namespace vidgraph::model_io
