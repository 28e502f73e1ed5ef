#include "wan_log.h"

#include <mutex>

#include <spdlog/spdlog.h>

namespace vidgraph::wan {

std::shared_ptr<spdlog::logger> models_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get("models")) {
    return existing;
  }
  auto logger = spdlog::default_logger()->clone("models");
  try {
    spdlog::register_logger(logger);
  } catch (const spdlog::spdlog_ex&) {
    // Another part of the model layer registered it between our get() and here.
    if (auto existing = spdlog::get("models")) {
      return existing;
    }
  }
  return logger;
}

}  // namespace vidgraph::wan
