// The model layer's named logger ("models"). Created on first use as a clone of the program's
// default logger so that it writes to the same sinks; safe to call from any thread.
#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace vidgraph::wan {

// Returns the "models" logger, creating and registering it when no one has yet.
std::shared_ptr<spdlog::logger> models_logger();

} // namespace vidgraph::wan
