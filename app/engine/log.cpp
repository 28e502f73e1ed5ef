// Named loggers that share the default logger's sinks.
#include "log.h"

#include <mutex>

#include <spdlog/spdlog.h>

namespace vidgraph::engine {

std::shared_ptr<spdlog::logger> layer_logger(const std::string& name) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::default_logger()->clone(name);
  spdlog::register_logger(logger);
  return logger;
}

std::shared_ptr<spdlog::logger> engine_logger() { return layer_logger("engine"); }

}  // namespace vidgraph::engine
