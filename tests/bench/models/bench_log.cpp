// Implements bench_log.h.
#include "bench_log.h"

#include <mutex>

#include <spdlog/spdlog.h>

namespace vidgraph::bench {

std::shared_ptr<spdlog::logger> bench_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get("bench")) return existing;
  auto logger = spdlog::default_logger()->clone("bench");
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace vidgraph::bench
