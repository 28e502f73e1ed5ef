// An spdlog sink that posts every log line to an EventBus as a Log event (run_id 0), so the CLI and
// the GUI show library log lines next to run events. Attach it to the default logger (or to any
// logger); loggers made by engine_logger() and its siblings clone the default logger's sinks.
// The bus must outlive the sink (remove the sink from its loggers before destroying the bus).
#pragma once

#include <mutex>

#include <spdlog/sinks/base_sink.h>

#include "events.h"

namespace vidgraph::engine {

class EventBusSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit EventBusSink(const EventBus& bus) : bus_(bus) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  const EventBus& bus_;
};

// spdlog level → engine LogLevel (critical → Error, off → Trace).
LogLevel from_spdlog_level(spdlog::level::level_enum level);

}  // namespace vidgraph::engine
