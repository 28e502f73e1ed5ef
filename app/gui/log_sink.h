// LogSink: an spdlog sink that hands every log line of the program (all layers' loggers clone the
// default logger's sinks) to a receiver, e.g. the log panel. Engine run events reach the panel
// through RunController instead; this sink covers log lines outside runs (loading, saving, plugins).
//
// Contract: the receiver is called on the logging thread with the sink's mutex held; it must only
// queue the line (QMetaObject::invokeMethod with Qt::QueuedConnection). setReceiver({}) detaches it,
// after which no call is made, so the sink may outlive the window that received lines.
#pragma once

#include <functional>
#include <mutex>

#include <QtCore/QString>

#include <spdlog/sinks/base_sink.h>

namespace vidgraph::gui {

class LogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  using Receiver = std::function<void(const QString& level, const QString& logger, const QString& text)>;

  void setReceiver(Receiver receiver);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  Receiver receiver_;
};

}  // namespace vidgraph::gui
