// Implements nodes_log.h through the engine's shared helper.
#include "nodes/nodes_log.h"

#include "engine/log.h"

namespace vidgraph::nodes {

std::shared_ptr<spdlog::logger> nodes_logger() { return engine::layer_logger("nodes"); }

}  // namespace vidgraph::nodes
