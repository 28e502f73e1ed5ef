// Logging set-up of vidgraph-run (see run_logging.h).
#include "run_logging.h"

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/event_bus_sink.h"

namespace vidgraph::cli {
namespace {

std::shared_ptr<spdlog::sinks::dist_sink_mt>& dist() {
  static std::shared_ptr<spdlog::sinks::dist_sink_mt> sink;
  return sink;
}

std::shared_ptr<spdlog::sinks::sink> stderr_sink() {
  static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return sink;
}

}  // namespace

void setup_logging(bool verbose) {
  dist() = std::make_shared<spdlog::sinks::dist_sink_mt>();
  dist()->set_sinks({stderr_sink()});
  auto logger = std::make_shared<spdlog::logger>("vidgraph", dist());
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
}

void route_logs_to_bus(const engine::EventBus& bus) {
  if (dist()) dist()->set_sinks({std::make_shared<engine::EventBusSink>(bus)});
}

void route_logs_to_stderr() {
  if (dist()) dist()->set_sinks({stderr_sink()});
}

}  // namespace vidgraph::cli
