// Implements node_util.h.
#include "nodes/types/node_util.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

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
  if (path.empty() || !fs::exists(path, ec)) return {};
  if (!fs::is_directory(path, ec)) return one_file(path);
  std::vector<std::string> parts;
  for (const auto& entry : fs::recursive_directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) {
      parts.push_back(entry.path().lexically_relative(path).string() + "=" + one_file(entry.path()));
    }
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts) out += p + ";";
  return out;
}

std::vector<std::string> split_paths(const std::string& text) {
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
