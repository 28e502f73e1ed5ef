// Shared pieces of vidgraph-attention. See attention_tool.h.
#include "app/cli/attention_tool.h"

#include "engine/environment.h"

#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace vidgraph::cli {

std::shared_ptr<spdlog::logger> attention_tool_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto logger = spdlog::get("cli");
  if (!logger) {
    logger = spdlog::default_logger()->clone("cli");
    spdlog::register_logger(logger);
  }
  return logger;
}

const std::vector<std::string>& tool_plugin_path() {
  static const std::vector<std::string> path = engine::read_environment().plugin_path;
  return path;
}

plugin::LoadedPlugin* load_plugin_or_report(const std::string& name) {
  plugin::PluginLoadReport report = plugin::load_attention_plugin(tool_plugin_path(), name);
  if (!report.plugin) {
    std::string msg = report.message();
    if (!name.empty()) msg = "no plugin named '" + name + "': " + msg;
    attention_tool_logger()->error("{}", msg);
    return nullptr;
  }
  return report.plugin;
}

plugin::TokenGrid parse_grid(const std::string& text) {
  std::vector<int64_t> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t x = 0;
    try {
      x = std::stoll(item, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || x <= 0)
      throw std::invalid_argument("--grid must be three positive integers T,H,W, got '" + text + "'");
    v.push_back(x);
  }
  if (v.size() != 3) throw std::invalid_argument("--grid must be three positive integers T,H,W, got '" + text + "'");
  const plugin::TokenGrid grid{v[0], v[1], v[2]};
  if (grid.size() < 0) {
    throw std::invalid_argument("--grid '" + text + "' has more tokens (T*H*W) than a 64-bit count holds; give the " +
                                "grid of the input's S tokens");
  }
  return grid;
}

}  // namespace vidgraph::cli
