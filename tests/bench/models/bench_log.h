// The benchmark's named logger ("bench"): a clone of the program's default logger (same sinks),
// created and registered on first use; safe from any thread.
#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace vidgraph::bench {

std::shared_ptr<spdlog::logger> bench_logger();

}  // namespace vidgraph::bench
