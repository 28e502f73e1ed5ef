// The engine layer's named logger ("engine"), created on first use as a clone of spdlog's default
// logger so it shares the program's sinks (console, file, EventBusSink).
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

namespace vidgraph::engine {

std::shared_ptr<spdlog::logger> engine_logger();
// Any layer's logger by name, made the same way (get or clone the default logger).
std::shared_ptr<spdlog::logger> layer_logger(const std::string& name);

}  // namespace vidgraph::engine
