// read_extra_model_paths (model_folders.h) over yaml-cpp, following ComfyUI's reading of the file
// (utils/extra_config.py): sections -> base_path + kind -> lines of folders.
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "model_folders.h"

#if VIDGRAPH_HAVE_YAML
#include <yaml-cpp/yaml.h>
#endif

namespace vidgraph::model_io {

namespace fs = std::filesystem;

namespace {

// ~ at the start -> $HOME; $NAME and ${NAME} -> the variable (left as written when unset), as
// Python's os.path.expanduser(os.path.expandvars(...)) do.
std::string expand(const std::string& text) {
  std::string s = text;
  const char* home = std::getenv("HOME");
  if (home != nullptr && !s.empty() && s[0] == '~' && (s.size() == 1 || s[1] == '/')) s = home + s.substr(1);
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '$') {
      out += s[i++];
      continue;
    }
    const bool braced = i + 1 < s.size() && s[i + 1] == '{';
    size_t j = i + (braced ? 2 : 1);
    size_t k = j;
    while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_')) ++k;
    const bool closed = !braced || (k < s.size() && s[k] == '}');
    const char* value = k > j && closed ? std::getenv(s.substr(j, k - j).c_str()) : nullptr;
    const size_t end = braced ? k + 1 : k;
    if (value != nullptr) {
      out += value;
      i = end;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// Aliases let a small file repeat a long block many times (each line then costs a search of the
// folders listed), so folder lines are counted as read, repeats included; real files have a handful.
void check_folder_count(size_t lines, const std::string& yaml_path) {
  if (lines <= kMaxModelFolders) return;
  throw std::runtime_error("The model paths file '" + yaml_path + "' lists more than " +
                           std::to_string(kMaxModelFolders) + " folders; list the folders that hold model files.");
}

}  // namespace

#if VIDGRAPH_HAVE_YAML

ModelFolders read_extra_model_paths(const std::string& yaml_path) {
  std::error_code ec;
  if (!fs::is_regular_file(yaml_path, ec)) {
    throw std::runtime_error("The model paths file '" + yaml_path +
                             "' does not exist or is not a regular file; point it at ComfyUI's "
                             "extra_model_paths.yaml.");
  }
  // yaml-cpp builds the whole document as nodes many times its size (a 48 MB file took 2.9 GB).
  const uint64_t bytes = fs::file_size(yaml_path, ec);
  if (!ec && bytes > kMaxModelPathsYamlBytes) {
    throw std::runtime_error("The model paths file '" + yaml_path + "' is " + std::to_string(bytes) +
                             " bytes, over the " + std::to_string(kMaxModelPathsYamlBytes / 1024) +
                             " KiB a model paths file may have (real ones are a few KB); point it at ComfyUI's "
                             "extra_model_paths.yaml.");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml_path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("The model paths file '" + yaml_path + "' is not valid YAML (" + e.what() +
                             "); fix it as ComfyUI's extra_model_paths.yaml.example shows.");
  }
  const fs::path yaml_dir = fs::absolute(yaml_path, ec).parent_path();
  ModelFolders out;
  size_t lines_read = 0;
  if (root.IsNull()) return out;
  if (!root.IsMap()) {
    throw std::runtime_error("The model paths file '" + yaml_path +
                             "' does not hold sections (name: {base_path: ..., vae: ...}).");
  }
  for (const auto& section : root) {
    const std::string name = section.first.as<std::string>("");
    const YAML::Node conf = section.second;
    if (conf.IsNull()) continue;
    if (!conf.IsMap()) {
      throw std::runtime_error("Section '" + name + "' of the model paths file '" + yaml_path +
                               "' is not a mapping of folder kinds to folders.");
    }
    fs::path base = yaml_dir;
    if (conf["base_path"] && conf["base_path"].IsScalar()) {
      base = yaml_dir / expand(conf["base_path"].as<std::string>());
    }
    for (const auto& entry : conf) {
      const std::string kind_name = entry.first.as<std::string>("");
      ModelKind kind;
      if (kind_name == "base_path" || kind_name == "is_default" || !model_kind_from_folder(kind_name, &kind)) continue;
      if (!entry.second.IsScalar()) {
        throw std::runtime_error("'" + name + "." + kind_name + "' in the model paths file '" + yaml_path +
                                 "' is not text; write one folder, or several lines after '|'.");
      }
      std::istringstream lines(entry.second.as<std::string>());
      for (std::string line; std::getline(lines, line);) {
        line = trim(line);
        if (line.empty()) continue;
        out.add(kind, (base / expand(line)).lexically_normal().string());
        check_folder_count(++lines_read, yaml_path);
      }
    }
  }
  return out;
}

#else

ModelFolders read_extra_model_paths(const std::string& yaml_path) {
  (void)expand;
  (void)trim;
  (void)check_folder_count;
  throw std::runtime_error("This build of Vidgraph has no YAML reader (built without yaml-cpp), so the "
                           "model paths file '" + yaml_path + "' cannot be read; set the model files' "
                           "params instead.");
}

#endif

}  // namespace vidgraph::model_io
