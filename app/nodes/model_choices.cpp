// Implements model_choices.h over models/io/model_folders.h, model_file_info.h and
// model/model_folder_pick.h.
#include "nodes/model_choices.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "models/io/model_file_info.h"
#include "models/io/model_folders.h"
#include "nodes/model/model_folder_pick.h"

namespace vidgraph::nodes {

namespace fs = std::filesystem;
namespace mio = model_io;

namespace {

const char* const kNotRecognised = "Not recognised";
const char* const kUnreadable = "Unreadable";

std::optional<mio::ModelKind> kind_of(const std::string& node_type, const std::string& param) {
  if (node_type == "LoadWanModel") {
    if (param == "dit") return mio::ModelKind::Dit;
    if (param == "vae") return mio::ModelKind::Vae;
    if (param == "text_encoder") return mio::ModelKind::TextEncoder;
  }
  if (node_type == "LoadLoRA" && param == "path") return mio::ModelKind::Lora;
  if (node_type == "LightVAEDecode" && param == "path") return mio::ModelKind::LightVae;
  return std::nullopt;
}

std::string group_of(const mio::ModelFileInfo& info) {
  if (!info.error.empty()) return kUnreadable;
  if (!info.model.empty()) return info.model + (info.unsupported.empty() ? "" : " — not run by Vidgraph");
  static const std::map<std::string, std::string> kNames = {
      {"wan2.2-vae", "Wan2.2 VAE (TI2V-5B)"},
      {"wan2.1-vae", "Wan2.1 VAE (Wan2.2-A14B, Wan2.1)"},
      {"umt5-xxl", "umT5-XXL text encoder"},
      {"t5", "Other T5 text encoders"},
      {"lora", "LoRA"},
      {"taehv", "TAEHV light decoder"}};
  const auto it = kNames.find(info.detected);
  return it != kNames.end() ? it->second : kNotRecognised;
}

// A file's group, read from its header once while its size and modification time stay the same
// (the drop-down lists the folders each time it opens).
std::string cached_group(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::string, std::string>> cache;  // path → (stamp, group)
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  const std::string stamp = std::to_string(size) + ":" + std::to_string(time);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = cache.find(path);
    if (it != cache.end() && it->second.first == stamp) return it->second.second;
  }
  const std::string group = group_of(mio::inspect_model_file(path));
  const std::lock_guard<std::mutex> lock(mutex);
  cache[path] = {stamp, group};
  return group;
}

// Recognised groups by name, then the files not recognised, then the unreadable ones.
int group_rank(const std::string& group) { return group == kUnreadable ? 2 : group == kNotRecognised ? 1 : 0; }

}  // namespace

bool is_model_file_param(const std::string& node_type, const std::string& param) {
  return kind_of(node_type, param).has_value();
}

std::vector<ModelFileChoice> model_file_choices(const std::string& node_type, const std::string& param,
                                                const nlohmann::json& params, const engine::RunOptions& options) {
  const std::optional<mio::ModelKind> kind = kind_of(node_type, param);
  if (!kind || !params.is_object()) return {};
  auto path_of = [&](const char* name) {
    const auto it = params.find(name);
    const std::string value = it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
    return value.empty() ? value : options.resolve_path(value);
  };
  const std::string folder = path_of("model_path");
  std::error_code ec;
  auto folders = search_folders(fs::is_directory(folder, ec) ? folder : std::string(),
                                path_of("model_paths_file"), options.model_paths_file);
  if (!folders.ok()) return {};
  std::vector<ModelFileChoice> out;
  for (std::string& path : mio::list_model_files(*folders, *kind)) {
    std::string group = cached_group(path);
    out.push_back({std::move(path), std::move(group)});
  }
  std::stable_sort(out.begin(), out.end(), [](const ModelFileChoice& a, const ModelFileChoice& b) {
    const int ra = group_rank(a.group), rb = group_rank(b.group);
    return ra != rb ? ra < rb : a.group < b.group;
  });
  return out;
}

}  // namespace vidgraph::nodes
