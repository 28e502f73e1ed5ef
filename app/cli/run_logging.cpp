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

// The attention plugin is loaded before the command line is parsed and logs "loaded …" at info on
// the "plugins" logger: registered here first, at warning level, so every command does not start
// with that line (failures still show); --verbose lowers it to debug for the rest of the run.
void register_plugins_logger(const std::shared_ptr<spdlog::logger>& from, bool verbose) {
  spdlog::drop("plugins");
  auto logger = from->clone("plugins");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::register_logger(logger);
}

const bool kPluginsLoggerQuiet = [] {
  register_plugins_logger(spdlog::default_logger(), false);
  return true;
}();

}  // namespace

void setup_logging(bool verbose) {
  dist() = std::make_shared<spdlog::sinks::dist_sink_mt>();
  dist()->set_sinks({stderr_sink()});
  auto logger = std::make_shared<spdlog::logger>("vidgraph", dist());
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  register_plugins_logger(logger, verbose);
}

void route_logs_to_bus(const engine::EventBus& bus) {
  if (dist()) dist()->set_sinks({std::make_shared<engine::EventBusSink>(bus)});
}

void route_logs_to_stderr() {
  if (dist()) dist()->set_sinks({stderr_sink()});
}

}  // namespace vidgraph::cli
