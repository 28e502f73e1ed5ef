// Implements model_choices.h over models/io/model_folders.h and model/model_folder_pick.h.
#include "nodes/model_choices.h"

#include <filesystem>
#include <optional>

#include "models/io/model_folders.h"
#include "nodes/model/model_folder_pick.h"

namespace vidgraph::nodes {

namespace mio = model_io;

namespace {

std::optional<mio::ModelKind> kind_of(const std::string& node_type, const std::string& param) {
  if (node_type == "LoadWanModel") {
    if (param == "dit") return mio::ModelKind::Dit;
    if (param == "vae") return mio::ModelKind::Vae;
    if (param == "text_encoder") return mio::ModelKind::TextEncoder;
  }
  if (node_type == "LoadLoRA" && param == "path") return mio::ModelKind::Lora;
  return std::nullopt;
}

}  // namespace

bool is_model_file_param(const std::string& node_type, const std::string& param) {
  return kind_of(node_type, param).has_value();
}

std::vector<std::string> model_file_choices(const std::string& node_type, const std::string& param,
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
  auto folders = search_folders(std::filesystem::is_directory(folder, ec) ? folder : std::string(),
                                path_of("model_paths_file"), options.model_paths_file);
  if (!folders.ok()) return {};
  return mio::list_model_files(*folders, *kind);
}

}  // namespace vidgraph::nodes
