// Finds and loads attention-backend plugins. The process owns what it loads, once.
//
// Search order (first usable plugin wins unless a name is requested):
//   1. every folder of the caller's `plugin_path`, in order (the front ends pass VIDGRAPH_PLUGIN_PATH,
//      app/engine/environment.h; this layer reads no environment);
//   2. <directory of the running executable>/../lib/vidgraph/plugins (the installed layout, and the
//      build tree's layout too), and <exe dir>/../<CMAKE_INSTALL_LIBDIR>/vidgraph/plugins when the
//      install's library folder differs (e.g. lib/x86_64-linux-gnu).
// No compile-time folder: an installed program never looks into the tree it was built in.
// A candidate is any regular file named *.so in those folders. Loading uses dlopen(RTLD_NOW |
// RTLD_LOCAL). Each failure (dlopen error, missing vidgraph_plugin_entry, ABI / LibTorch / compiler
// mismatch, a throwing factory) is recorded with the file and the reason, logged on the "plugins"
// logger and the file skipped; nothing crashes. When nothing loads, the report's message lists the
// places searched and why each candidate failed.
//
// Lifetime: a file is loaded once per process. One registry owns every loaded plugin for the
// process's life, keyed by the file's canonical path, and a later lookup of the same file returns the
// same LoadedPlugin. Nothing is ever unloaded: libraries are opened with RTLD_NODELETE and never
// closed at run time, since tensors, autograd graphs and device-code registrations (a CUDA fatbinary
// whose mapping is gone makes the next kernel launch spin forever) may outlive any one user. The
// backends are not destroyed at exit either: static destruction would race the GPU runtime's own
// teardown, and the system reclaims everything anyway. AttentionBackend::shutdown() stays available.
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/api/plugin_entry.h"

#include <memory>
#include <string>
#include <vector>

namespace vidgraph::plugin {

struct PluginFailure {
  std::string path;
  std::string reason;
};

class LoadedPlugin {
 public:
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }
  AttentionBackend& backend() { return *backend_; }
  const AttentionBackend& backend() const { return *backend_; }

 private:
  friend class PluginRegistry;
  LoadedPlugin() = default;

  std::string path_;
  std::string name_;
  std::string version_;
  std::string description_;
  AttentionBackend* backend_ = nullptr;
};

struct PluginLoadReport {
  LoadedPlugin* plugin = nullptr;         // owned by the process; null when nothing loaded
  std::vector<std::string> searched;     // folders looked in, in order
  std::vector<PluginFailure> failures;   // candidates that did not load
  // One paragraph: what loaded, or "no plugin found" with the folders searched and every failure.
  std::string message() const;
};

// The folders searched, in order (existing or not): `plugin_path`, then those next to the executable.
std::vector<std::string> plugin_search_dirs(const std::vector<std::string>& plugin_path);

// Loads one file, or returns the plugin already loaded from it. On failure returns nullptr and sets
// *error to a sentence naming the file and why.
LoadedPlugin* load_plugin_file(const std::string& path, std::string* error);

// Every plugin this process has loaded, in load order.
std::vector<const LoadedPlugin*> loaded_plugins();

// Searches plugin_search_dirs(plugin_path) and loads the first usable plugin, or the one whose
// name equals `name` when given (others are then not loaded).
PluginLoadReport load_attention_plugin(const std::vector<std::string>& plugin_path, const std::string& name = {});

// Same, over exactly these folders (none next to the executable).
PluginLoadReport load_attention_plugin_from(const std::vector<std::string>& dirs,
                                            const std::string& name = {});

// "<name> <version> (plugin ABI N, LibTorch X.Y) from <path>", for --version outputs.
std::string plugin_version_string(const LoadedPlugin& plugin);

// The program's own handshake values, for comparison and messages.
uint32_t host_plugin_abi_version();
const char* host_torch_version();
const char* host_compiler_abi();

}  // namespace vidgraph::plugin
