// Logging set-up of vidgraph-run: the default logger writes through one spdlog dist_sink, so every
// layer logger cloned from it (engine_logger(), "nodes", "models", ...) follows when the runner
// redirects output: to stderr before a run, to the engine's event bus during it (the renderer then
// shows the lines above its progress bar, or as JSON log events).
#pragma once

#include "engine/events.h"

namespace vidgraph::cli {

void setup_logging(bool verbose);
void route_logs_to_bus(const engine::EventBus& bus);
void route_logs_to_stderr();

}  // namespace vidgraph::cli
