// Plugin discovery, handshake checks, loading and the designed shutdown order. See plugin_loader.h.
#include "plugins/api/plugin_loader.h"

#include "plugins/api/plugin_log.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <system_error>
#include <utility>

namespace vidgraph::plugin {
namespace fs = std::filesystem;
namespace {

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string handshake_mismatch(const VidgraphPluginInfo& info) {
  if (info.abi_version != VIDGRAPH_PLUGIN_ABI_VERSION)
    return "plugin ABI version " + std::to_string(info.abi_version) + " does not match the program's " +
           std::to_string(VIDGRAPH_PLUGIN_ABI_VERSION) + "; rebuild the plugin against this Vidgraph";
  const std::string torch = info.torch_version ? info.torch_version : "(none)";
  if (torch != VIDGRAPH_PLUGIN_TORCH_VERSION)
    return "plugin was built with LibTorch " + torch + " but the program uses " +
           VIDGRAPH_PLUGIN_TORCH_VERSION + "; rebuild the plugin with the same LibTorch";
  const std::string abi = info.compiler_abi ? info.compiler_abi : "(none)";
  if (abi != VIDGRAPH_PLUGIN_COMPILER_ABI)
    return "plugin compiler ABI '" + abi + "' does not match the program's '" +
           VIDGRAPH_PLUGIN_COMPILER_ABI + "'";
  if (!info.name || !info.version || !info.create_attention_backend || !info.destroy_attention_backend)
    return "plugin entry is incomplete (name, version or factory missing)";
  return {};
}

}  // namespace

std::vector<std::string> plugin_search_dirs(const std::vector<std::string>& plugin_path) {
  std::vector<std::string> dirs;
  for (const std::string& dir : plugin_path)
    if (!dir.empty()) dirs.push_back(dir);
  const std::string exe = executable_dir();
  if (!exe.empty()) {
    dirs.push_back((fs::path(exe) / ".." / "lib" / "vidgraph" / "plugins").lexically_normal().string());
#ifdef VIDGRAPH_INSTALL_LIBDIR
    // Installs whose library folder is not plain lib/ (e.g. lib/x86_64-linux-gnu).
    dirs.push_back((fs::path(exe) / ".." / VIDGRAPH_INSTALL_LIBDIR / "vidgraph" / "plugins").lexically_normal().string());
#endif  // VIDGRAPH_INSTALL_LIBDIR
  }
  std::vector<std::string> unique;
  for (const auto& d : dirs)
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  return unique;
}

// The process's loaded plugins. Deliberately never destroyed (see plugin_loader.h).
class PluginRegistry {
 public:
  static PluginRegistry& instance() {
    static auto* registry = new PluginRegistry();
    return *registry;
  }

  LoadedPlugin* load(const std::string& path, std::string* error) {
    auto set_error = [&](const std::string& why) -> LoadedPlugin* {
      if (error) *error = "plugin '" + path + "' not loaded: " + why;
      plugin_logger()->warn("plugin '{}' not loaded: {}", path, why);
      return nullptr;
    };
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return set_error("no such file");
    const fs::path canonical = fs::canonical(path, ec);
    const std::string key = ec ? path : canonical.string();  // never "" for a file that vanished meanwhile
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : plugins_)
      if (p.first == key) return p.second.get();
    dlerror();
    // RTLD_NODELETE: a library, once opened, stays mapped even if something else dlcloses it.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* why = dlerror();
      return set_error(std::string("dlopen failed: ") + (why ? why : "unknown error"));
    }
    auto entry = reinterpret_cast<VidgraphPluginEntryFn>(dlsym(handle, VIDGRAPH_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr)
      return set_error(std::string("it does not export '") + VIDGRAPH_PLUGIN_ENTRY_SYMBOL +
                       "' (not a Vidgraph plugin)");
    const VidgraphPluginInfo* info = entry();
    const std::string mismatch = info ? handshake_mismatch(*info) : "entry returned no information";
    if (!mismatch.empty()) return set_error(mismatch);
    std::unique_ptr<LoadedPlugin> plugin(new LoadedPlugin());
    plugin->path_ = path;
    plugin->name_ = info->name;
    plugin->version_ = info->version;
    plugin->description_ = info->description ? info->description : "";
    try {
      plugin->backend_ = info->create_attention_backend();
    } catch (const std::exception& ex) {
      return set_error(std::string("its factory failed: ") + ex.what());
    }
    if (plugin->backend_ == nullptr) return set_error("its factory returned no backend");
    plugin_logger()->info("loaded {}", plugin_version_string(*plugin));
    plugins_.emplace_back(key, std::move(plugin));
    return plugins_.back().second.get();
  }

  std::vector<const LoadedPlugin*> loaded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const LoadedPlugin*> out;
    for (const auto& p : plugins_) out.push_back(p.second.get());
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::unique_ptr<LoadedPlugin>>> plugins_;  // canonical path, plugin
};

LoadedPlugin* load_plugin_file(const std::string& path, std::string* error) {
  return PluginRegistry::instance().load(path, error);
}

std::vector<const LoadedPlugin*> loaded_plugins() { return PluginRegistry::instance().loaded(); }

PluginLoadReport load_attention_plugin_from(const std::vector<std::string>& dirs, const std::string& name) {
  PluginLoadReport report;
  report.searched = dirs;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".so") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::string why;
      LoadedPlugin* plugin = load_plugin_file(file, &why);
      if (!plugin) {
        report.failures.push_back({file, why});
        continue;
      }
      if (!name.empty() && plugin->name() != name) continue;
      report.plugin = plugin;
      return report;
    }
  }
  return report;
}

PluginLoadReport load_attention_plugin(const std::vector<std::string>& plugin_path, const std::string& name) {
  return load_attention_plugin_from(plugin_search_dirs(plugin_path), name);
}

std::string PluginLoadReport::message() const {
  std::ostringstream s;
  if (plugin) {
    s << "loaded " << plugin_version_string(*plugin);
  } else {
    s << "no attention plugin found. Searched:";
    for (const auto& d : searched) s << " " << d;
    s << " (set VIDGRAPH_PLUGIN_PATH to a folder holding libvidgraph_attention.so).";
  }
  for (const auto& f : failures) s << "\n  " << f.reason;
  return s.str();
}

std::string plugin_version_string(const LoadedPlugin& plugin) {
  return plugin.name() + " " + plugin.version() + " (plugin ABI " +
         std::to_string(VIDGRAPH_PLUGIN_ABI_VERSION) + ", LibTorch " + VIDGRAPH_PLUGIN_TORCH_VERSION +
         ") from " + plugin.path();
}

uint32_t host_plugin_abi_version() { return VIDGRAPH_PLUGIN_ABI_VERSION; }
const char* host_torch_version() { return VIDGRAPH_PLUGIN_TORCH_VERSION; }
const char* host_compiler_abi() { return VIDGRAPH_PLUGIN_COMPILER_ABI; }

}  // namespace vidgraph::plugin
