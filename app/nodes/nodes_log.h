// The nodes layer's named logger ("nodes"), a clone of the program's default logger.
#pragma once

#include <memory>

#include <spdlog/logger.h>

namespace vidgraph::nodes {

std::shared_ptr<spdlog::logger> nodes_logger();

}  // namespace vidgraph::nodes
