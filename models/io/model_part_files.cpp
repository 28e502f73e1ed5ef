// Implements model_part_files.h with error codes only (listings of unreadable folders are empty).
#include "models/io/model_part_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

namespace vidgraph::model_io {
namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxIndexBytes = std::uintmax_t(64) << 20;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Names of the top-level entries of `dir`, sorted (one readdir pass, no stat).
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

std::vector<std::string> with_suffix(const std::vector<std::string>& names, const std::string& suffix) {
  std::vector<std::string> out;
  std::copy_if(names.begin(), names.end(), std::back_inserter(out),
               [&](const std::string& n) { return ends_with(n, suffix); });
  return out;
}

bool is_folder(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// "" for a regular file, else what it is instead (a FIFO would block the reader that opens it).
std::string not_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "'" + path + "' is missing or unreadable";
  if (S_ISREG(st.st_mode)) return "";
  return "'" + path + "' is not a regular file";
}

// The shard names of an index json, or a problem.
std::set<std::string> index_shards(const fs::path& index, std::string* problem) {
  std::error_code ec;
  if (fs::file_size(index, ec) > kMaxIndexBytes || ec) {
    *problem = "index '" + index.string() + "' is unreadable or larger than 64 MB";
    return {};
  }
  std::ifstream in(index);
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object()) {
    *problem = "index '" + index.string() + "' is not JSON with a \"weight_map\" object";
    return {};
  }
  std::set<std::string> shards;
  for (const auto& item : json["weight_map"].items()) {
    if (!item.value().is_string()) {
      *problem = "index '" + index.string() + "' maps '" + item.key() + "' to something other than a file name";
      return {};
    }
    shards.insert(item.value().get<std::string>());
  }
  return shards;
}

void dit_files(const fs::path& given, ModelPartFiles& out) {
  fs::path dir = given;
  std::vector<std::string> names = entry_names(dir);
  if (with_suffix(names, ".safetensors").empty() && is_folder(given / "transformer")) {
    dir = given / "transformer";
    names = entry_names(dir);
  }
  out.folder = dir.string();
  out.looked_in = {given.string(), (given / "transformer").string()};
  if (std::binary_search(names.begin(), names.end(), "config.json")) out.config = (dir / "config.json").string();
  const std::vector<std::string> indexes = with_suffix(names, ".safetensors.index.json");
  std::vector<std::string> shards = with_suffix(names, ".safetensors");
  if (!indexes.empty()) {
    out.index = (dir / indexes.front()).string();
    const std::set<std::string> named = index_shards(out.index, &out.problem);
    shards.assign(named.begin(), named.end());
  }
  for (const std::string& shard : shards) out.weights.push_back((dir / shard).string());
  if (out.weights.empty() && out.problem.empty()) {
    out.problem = "folder '" + dir.string() + "' holds no .safetensors file and no index json";
  }
}

void vae_files(const fs::path& given, ModelPartFiles& out) {
  out.folder = given.string();
  out.looked_in = {given.string(), (given / "vae").string()};
  for (const char* sub : {"vae/diffusion_pytorch_model.safetensors", "diffusion_pytorch_model.safetensors"}) {
    std::error_code ec;
    if (fs::exists(given / sub, ec)) {
      out.weights = {(given / sub).string()};
      return;
    }
  }
  out.problem = "folder '" + given.string() + "' has no vae/diffusion_pytorch_model.safetensors";
}

void text_encoder_files(const fs::path& given, ModelPartFiles& out) {
  const fs::path dir = is_folder(given / "text_encoder") ? given / "text_encoder" : given;
  out.folder = dir.string();
  out.looked_in = {given.string(), (given / "text_encoder").string()};
  for (const std::string& name : with_suffix(entry_names(dir), ".safetensors")) {
    out.weights.push_back((dir / name).string());
  }
  if (out.weights.empty()) out.problem = "folder '" + dir.string() + "' has no .safetensors shards of a umT5 encoder";
}

}  // namespace

std::vector<std::string> ModelPartFiles::all() const {
  std::vector<std::string> out;
  if (!index.empty()) out.push_back(index);
  if (!config.empty()) out.push_back(config);
  out.insert(out.end(), weights.begin(), weights.end());
  return out;
}

ModelPartFiles model_part_files(ModelKind kind, const std::string& path) {
  ModelPartFiles out;
  if (path.empty()) return out;
  if (!is_folder(path)) {
    out.weights = {path};
    out.problem = not_regular(path);
    return out;
  }
  switch (kind) {
    case ModelKind::Dit: dit_files(path, out); break;
    case ModelKind::Vae: vae_files(path, out); break;
    case ModelKind::TextEncoder: text_encoder_files(path, out); break;
    case ModelKind::Lora: out.problem = "'" + path + "' is a folder; a LoRA is one file"; break;
    case ModelKind::LightVae: out.problem = "'" + path + "' is a folder; a light VAE is one file"; break;
  }
  for (const std::string& file : out.weights) {
    if (!out.problem.empty()) break;
    out.problem = not_regular(file);
  }
  return out;
}

std::string tokenizer_file(const std::string& path, std::vector<std::string>* looked_in) {
  if (path.empty() || !is_folder(path)) return path;
  if (looked_in) {
    looked_in->push_back(path);
    for (const char* sub : {"tokenizer", "google", "google/umt5-xxl"}) {
      looked_in->push_back((fs::path(path) / sub).string());
    }
  }
  for (const char* sub : {"spiece.model", "tokenizer/spiece.model", "google/umt5-xxl/spiece.model"}) {
    std::error_code ec;
    if (fs::exists(fs::path(path) / sub, ec)) return (fs::path(path) / sub).string();
  }
  return "";
}

}  // namespace vidgraph::model_io
