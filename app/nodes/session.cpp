// Implements session.h.
#include "nodes/session.h"

#include "nodes/nodes_log.h"
#include "plugins/api/plugin_loader.h"

namespace vidgraph::nodes {

Session::Session(SessionSettings settings) : settings_(std::move(settings)) {
  plugin::PluginLoadReport report = plugin::load_attention_plugin(settings_.plugin_path);
  if (report.plugin) {
    nodes_logger()->debug("Attention plugin {} {} loaded from {}", report.plugin->name(), report.plugin->version(),
                         report.plugin->path());
    plugin_ = report.plugin;
  } else {
    plugin_problem_ = report.message();
  }
  register_builtin_nodes(registry_, builtin_options());
}

Session::~Session() = default;

plugin::AttentionBackend* Session::attention_backend() const { return plugin_ ? &plugin_->backend() : nullptr; }

std::string Session::attention_plugin_description() const {
  return plugin_ ? plugin::plugin_version_string(*plugin_) : std::string("none found");
}

BuiltinNodeOptions Session::builtin_options() const {
  BuiltinNodeOptions options;
  options.attention_backend = attention_backend();
  if (!plugin_) options.missing_backend = plugin_problem_;
  return options;
}

engine::EngineConfig Session::engine_config() const {
  engine::EngineConfig config;
  if (settings_.cache_budget_bytes > 0) config.cache_budget_bytes = settings_.cache_budget_bytes;
  return config;
}

engine::RunOptions Session::run_options() const {
  engine::RunOptions options;
  options.resources_dir = settings_.resources_dir;
  options.model_paths_file = settings_.model_paths_file;
  return options;
}

}  // namespace vidgraph::nodes
