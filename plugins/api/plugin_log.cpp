// The "plugins" logger. See plugin_log.h.
#include "plugins/api/plugin_log.h"

#include <mutex>

namespace vidgraph::plugin {

std::shared_ptr<spdlog::logger> plugin_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto logger = spdlog::get("plugins");
  if (!logger) {
    logger = spdlog::default_logger()->clone("plugins");
    spdlog::register_logger(logger);
  }
  return logger;
}

}  // namespace vidgraph::plugin
