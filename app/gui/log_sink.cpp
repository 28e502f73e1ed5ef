// LogSink (see log_sink.h).
#include "gui/log_sink.h"

namespace vidgraph::gui {

void LogSink::setReceiver(Receiver receiver) {
  std::lock_guard<std::mutex> lock(mutex_);
  receiver_ = std::move(receiver);
}

void LogSink::sink_it_(const spdlog::details::log_msg& msg) {
  if (!receiver_) return;
  const auto level = spdlog::level::to_string_view(msg.level);
  receiver_(QString::fromUtf8(level.data(), static_cast<int>(level.size())),
            QString::fromUtf8(msg.logger_name.data(), static_cast<int>(msg.logger_name.size())),
            QString::fromUtf8(msg.payload.data(), static_cast<int>(msg.payload.size())));
}

}  // namespace vidgraph::gui
