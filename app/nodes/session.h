// The application session: what vidgraph-run and the vidgraph editor each build once at start-up,
// the same way. It owns the attention plugin (loaded once, released when the session ends, after
// the node types that call it), the node registry with the built-in node types registered against
// that plugin's backend, and the settings runs take from it (resources folder, cache budget).
//
// Build it after the process has picked its GPU (a rank of several processes joins its group
// first): loading the plugin may initialise the device runtime. Engines, documents and cached
// results that use its node types must end before it. No LibTorch, OpenCV, FFmpeg or Qt types here.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/registry.h"
#include "engine/run_options.h"
#include "nodes/register_nodes.h"

namespace vidgraph::plugin {
class LoadedPlugin;  // plugins/api/plugin_loader.h (not included: no ATen here)
}  // namespace vidgraph::plugin

namespace vidgraph::nodes {

// Front ends fill the last two from engine::read_environment() (engine/environment.h).
struct SessionSettings {
  std::string resources_dir;             // "{resources}/" paths; empty = engine::default_resources_dir()
  std::size_t cache_budget_bytes = 0;    // the engine's result cache; 0 = the engine's default (8 GiB)
  std::vector<std::string> plugin_path;  // folders searched for the plugin first (VIDGRAPH_PLUGIN_PATH)
  std::string model_paths_file;          // the runs' default extra_model_paths.yaml (VIDGRAPH_MODEL_PATHS)
};

class Session {
 public:
  // Loads the attention plugin (plugins/api's search order: settings.plugin_path, then next to the
  // executable) and registers the built-in node types. Without a loadable plugin the
  // session still opens: Wan Sampler offers only "full" and its runs fail naming plugin_problem().
  explicit Session(SessionSettings settings = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Every front end's node types; a caller may add its own before the first run.
  engine::Registry& registry() { return registry_; }
  const engine::Registry& registry() const { return registry_; }

  // The loaded plugin's backend, or null when none loaded.
  plugin::AttentionBackend* attention_backend() const;
  // "vidgraph_attention 0.1.0 (plugin ABI 1, ...) from PATH", or "none found".
  std::string attention_plugin_description() const;
  // The loader's report when no plugin loaded (folders searched, why each candidate failed); "" when one did.
  const std::string& plugin_problem() const { return plugin_problem_; }
  // The options the built-in types were registered with: for a registry of one's own that holds
  // other types too (tests), sharing this session's plugin.
  BuiltinNodeOptions builtin_options() const;

  const SessionSettings& settings() const { return settings_; }
  engine::EngineConfig engine_config() const;
  // RunOptions with this session's resources folder and model_paths_file (the rest is the run's).
  engine::RunOptions run_options() const;

 private:
  SessionSettings settings_;
  plugin::LoadedPlugin* plugin_ = nullptr;  // owned by the process (plugin_loader.h)
  std::string plugin_problem_;
  engine::Registry registry_;
};

}  // namespace vidgraph::nodes
