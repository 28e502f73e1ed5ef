// Implements attention_plugin.h.
#include "nodes/types/attention_plugin.h"

#include <memory>
#include <mutex>

#include "nodes/nodes_log.h"
#include "plugins/api/plugin_loader.h"

namespace vidgraph::nodes {

namespace {

std::mutex g_mutex;
plugin::AttentionBackend* g_external = nullptr;
std::unique_ptr<plugin::LoadedPlugin>& loaded() {
  // Deliberately leaked: the backend must outlive every cached model that may still call it during
  // static destruction of the engine cache; the loader's shutdown order applies when the program
  // releases it explicitly.
  static auto* plugin = new std::unique_ptr<plugin::LoadedPlugin>();
  return *plugin;
}

}  // namespace

plugin::AttentionBackend* attention_backend(std::string* error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_external) return g_external;
  if (!loaded()) {
    plugin::PluginLoadReport report = plugin::load_attention_plugin();
    if (!report.plugin) {
      if (error) *error = report.message();
      return nullptr;
    }
    nodes_logger()->info("Attention plugin {} {} loaded from {}", report.plugin->name(),
                         report.plugin->version(), report.plugin->path());
    loaded() = std::move(report.plugin);
  }
  return &loaded()->backend();
}

void use_attention_backend(plugin::AttentionBackend* backend) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_external = backend;
}

std::string attention_plugin_description() {
  std::string error;
  if (!attention_backend(&error)) return "none found";
  std::lock_guard<std::mutex> lock(g_mutex);
  if (loaded()) return plugin::plugin_version_string(*loaded());
  return "loaded by the host program";
}

}  // namespace vidgraph::nodes
