// Implements model_folders.h except read_extra_model_paths (model_paths_yaml.cpp).
#include "model_folders.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <spdlog/spdlog.h>

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
                                   {"clip", ModelKind::TextEncoder},     {"loras", ModelKind::Lora},
                                   {"vae_approx", ModelKind::LightVae}};

bool weight_extension(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".safetensors", ".sft", ".pth", ".pt", ".ckpt", ".bin", ".gguf"};
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return kExtensions.count(ext) > 0;
}

// One listing's walk: the limits, what it found, and what it left out (for the notes).
struct Walk {
  const ScanLimits& limits;
  std::vector<std::string>& out;
  std::set<fs::path> seen;  // real folders, each listed once (symlink loops)
  size_t entries = 0;
  std::set<std::string> system_skipped;
  size_t deep_skipped = 0;
  std::string first_deep;
  bool entries_full = false;
  bool files_full = false;
};

// Kernel and device file systems: endless or huge, never model files, and reading some blocks.
// Returns the system folder `real` lies in ("/dev" for /dev/shm reached through /run/shm), or "".
std::string system_folder(const fs::path& real) {
  const std::string s = real.string();
  for (const char* root : {"/proc", "/sys", "/dev"}) {
    const std::string r = root;
    if (s == r || s.rfind(r + "/", 0) == 0) return r;
  }
  return {};
}

void scan(const fs::path& dir, int depth, Walk& w) {
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (ec) return;
  if (const std::string system = system_folder(real); !system.empty()) {
    w.system_skipped.insert(system);
    return;
  }
  if (!w.seen.insert(real).second) return;
  std::vector<fs::path> files, subdirs;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (++w.entries > w.limits.entries) {
      w.entries_full = true;
      break;
    }
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
    if (w.out.size() >= w.limits.files) {
      w.files_full = true;
      return;
    }
    w.out.push_back(f.string());
  }
  for (const fs::path& d : subdirs) {
    if (w.entries_full || w.files_full) return;
    if (depth + 1 > w.limits.depth) {
      if (w.deep_skipped++ == 0) w.first_deep = d.string();
      continue;
    }
    scan(d, depth + 1, w);
  }
}

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "'" : ", '") + s + "'";
  return out;
}

// Sentences for what the walk under `folder` left out; the walk's state is reset for the next folder.
void add_notes(const std::string& folder, const char* kind, Walk& w, std::vector<std::string>& notes) {
  if (!w.system_skipped.empty()) {
    notes.push_back("Skipped " + join(w.system_skipped) + " under '" + folder +
                    "': system folders hold no model files.");
  }
  if (w.deep_skipped > 0) {
    notes.push_back("Skipped " + std::to_string(w.deep_skipped) + " folders deeper than " +
                    std::to_string(w.limits.depth) + " levels under '" + folder + "' (the first: '" + w.first_deep +
                    "'); list the deep folder itself in extra_model_paths.yaml.");
  }
  if (w.entries_full) {
    notes.push_back("Stopped listing " + std::string(kind) + " files after looking at " +
                    std::to_string(w.limits.entries) + " folder entries under '" + folder +
                    "'; point the " + kind + " folder at where the model files are, not a folder above them.");
  }
  if (w.files_full) {
    notes.push_back("Stopped listing " + std::string(kind) + " files at " + std::to_string(w.limits.files) +
                    " files under '" + folder + "'; the rest are not listed.");
  }
  w.system_skipped.clear();
  w.deep_skipped = 0;
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

std::vector<std::string> list_model_files(const ModelFolders& folders, ModelKind kind,
                                          std::vector<std::string>* notes, const ScanLimits& limits) {
  std::vector<std::string> out;
  const auto it = folders.folders.find(kind);
  if (it == folders.folders.end()) return out;
  Walk walk{limits, out};
  std::vector<std::string> said;
  for (const std::string& folder : it->second) {
    if (walk.entries_full || walk.files_full) break;  // the listing's budget is spent
    scan(folder, 0, walk);
    add_notes(folder, model_kind_folder(kind), walk, said);
  }
  // Logged only when the caller does not take the notes (vidgraph-run models prints them itself,
  // before its logger is set up).
  if (notes != nullptr) notes->insert(notes->end(), said.begin(), said.end());
  else for (const std::string& note : said) spdlog::warn("{}", note);
  return out;
}

}  // namespace vidgraph::model_io
