// The "plugins" spdlog logger of the plugin SDK (shares the program's sinks).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace vidgraph::plugin {

// The logger named "plugins", cloned from the default logger on first use.
std::shared_ptr<spdlog::logger> plugin_logger();

}  // namespace vidgraph::plugin
