// spdlog → EventBus bridge.
#include "event_bus_sink.h"

namespace vidgraph::engine {

LogLevel from_spdlog_level(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return LogLevel::Trace;
    case spdlog::level::debug: return LogLevel::Debug;
    case spdlog::level::info: return LogLevel::Info;
    case spdlog::level::warn: return LogLevel::Warn;
    case spdlog::level::err:
    case spdlog::level::critical: return LogLevel::Error;
    default: return LogLevel::Trace;
  }
}

void EventBusSink::sink_it_(const spdlog::details::log_msg& msg) {
  Event e;
  e.kind = EventKind::Log;
  e.level = from_spdlog_level(msg.level);
  e.text.assign(msg.payload.data(), msg.payload.size());
  if (msg.logger_name.size() > 0) e.logger.assign(msg.logger_name.data(), msg.logger_name.size());
  bus_.post(e);
}

}  // namespace vidgraph::engine
