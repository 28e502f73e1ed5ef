// The "attention" spdlog logger of the attention plugin (shares the program's sinks).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace vidgraph::attention {

// The logger named "attention", cloned from the default logger on first use.
std::shared_ptr<spdlog::logger> attention_logger();

}  // namespace vidgraph::attention
