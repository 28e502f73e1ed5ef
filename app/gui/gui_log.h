// The GUI layer's named logger ("gui"), a clone of spdlog's default logger made on first use so it
// shares the program's sinks (console, the log panel's sink).
#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace vidgraph::gui {

std::shared_ptr<spdlog::logger> guiLogger();

}  // namespace vidgraph::gui
