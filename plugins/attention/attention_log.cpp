// The "attention" logger. See attention_log.h.
#include "plugins/attention/attention_log.h"

#include <mutex>

namespace vidgraph::attention {

std::shared_ptr<spdlog::logger> attention_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto logger = spdlog::get("attention");
  if (!logger) {
    logger = spdlog::default_logger()->clone("attention");
    spdlog::register_logger(logger);
  }
  return logger;
}

}  // namespace vidgraph::attention
