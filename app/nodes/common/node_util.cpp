// Implements node_util.h.
#include "nodes/common/node_util.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "nodes/input_file.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

std::string one_file(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return {};
  const auto time = fs::last_write_time(path, ec);
  if (ec) return {};
  return std::to_string(size) + ":" + std::to_string(time.time_since_epoch().count());
}

}  // namespace

std::string file_fingerprint(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return {};
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return {};
  if (!fs::is_directory(status)) return one_file(path);
  const auto time = fs::last_write_time(path, ec);
  return ec ? std::string() : "folder:" + std::to_string(time.time_since_epoch().count());
}

std::optional<at::ScalarType> dtype_param(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  return std::nullopt;
}

std::string files_fingerprint(const std::vector<std::string>& files) {
  std::string out;
  for (const auto& file : files) out += file + "=" + file_fingerprint(file) + ";";
  return out;
}

void require_utf8_params(const nlohmann::json& params) {
  for (const auto& item : params.items()) {
    if (!item.value().is_string()) continue;
    const std::string message = check_utf8_param(item.key(), item.value().get<std::string>());
    if (!message.empty()) throw std::runtime_error(message);
  }
}

std::string file_param_fingerprint(const nlohmann::json& params, const engine::RunOptions& options,
                                   const std::string& param) {
  require_utf8_params(params);
  return file_fingerprint(options.resolve_path(params.value(param, std::string())));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    const auto b = current.find_first_not_of(" \t\n");
    const auto e = current.find_last_not_of(" \t\n");
    if (b != std::string::npos) out.push_back(current.substr(b, e - b + 1));
    current.clear();
  };
  for (char ch : text) {
    if (ch == ',' || ch == ';') flush();
    else current += ch;
  }
  flush();
  return out;
}

engine::FingerprintFn output_fingerprint(std::string param) {
  return [param = std::move(param)](const nlohmann::json& params, const engine::RunOptions& options) {
    const std::string name = params.value(param, std::string());
    return name.empty() ? std::string() : options.resolve_path(name);
  };
}

}  // namespace vidgraph::nodes
