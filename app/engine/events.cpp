// Event names, their JSON form, and the thread-safe bus.
#include "events.h"

#include <algorithm>

namespace vidgraph::engine {

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::RunStarted: return "run_started";
    case EventKind::RunFinished: return "run_finished";
    case EventKind::NodeQueued: return "node_queued";
    case EventKind::NodeStarted: return "node_started";
    case EventKind::NodeProgress: return "node_progress";
    case EventKind::NodeCached: return "node_cached";
    case EventKind::NodeBypassed: return "node_bypassed";
    case EventKind::NodeFinished: return "node_finished";
    case EventKind::NodeFailed: return "node_failed";
    case EventKind::NodeCancelled: return "node_cancelled";
    case EventKind::Log: return "log";
    case EventKind::Preview: return "preview";
  }
  return "unknown";
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Succeeded: return "succeeded";
    case RunStatus::Failed: return "failed";
    case RunStatus::Cancelled: return "cancelled";
    case RunStatus::Invalid: return "invalid";
  }
  return "unknown";
}

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warn";
    case LogLevel::Error: return "error";
  }
  return "info";
}

nlohmann::json event_to_json(const Event& e) {
  nlohmann::json j{{"event", to_string(e.kind)}, {"run_id", e.run_id}};
  if (!e.node_id.empty()) j["node"] = e.node_id;
  if (!e.node_type.empty()) j["type"] = e.node_type;
  switch (e.kind) {
    case EventKind::RunStarted: j["nodes"] = e.value; break;
    case EventKind::RunFinished:
      j["status"] = to_string(e.status);
      j["seconds"] = e.seconds;
      if (!e.text.empty()) j["message"] = e.text;
      break;
    case EventKind::NodeProgress:
      j["value"] = e.value;
      j["max"] = e.max;
      if (!e.text.empty()) j["text"] = e.text;
      if (!e.metrics.empty()) {
        nlohmann::json& metrics = j["metrics"] = nlohmann::json::object();
        for (const auto& [name, number] : e.metrics) metrics[name] = number;
      }
      break;
    case EventKind::NodeFinished:
    case EventKind::NodeCancelled: j["seconds"] = e.seconds; break;
    case EventKind::NodeFailed:
      j["seconds"] = e.seconds;
      j["message"] = e.text;
      break;
    case EventKind::Log:
      j["level"] = to_string(e.level);
      if (!e.logger.empty()) j["logger"] = e.logger;
      j["message"] = e.text;
      break;
    case EventKind::Preview:
      j["value_type"] = e.preview.type;
      j["bytes"] = e.preview.bytes;
      if (e.max > 0) {
        j["step"] = e.value;
        j["steps"] = e.max;
      }
      if (!e.text.empty()) j["path"] = e.text;
      break;
    default: break;
  }
  return j;
}

struct EventBus::Entry {
  SubscriptionId id;
  Handler handler;
  std::atomic<bool> active{true};
  std::atomic<int> in_flight{0};
};

EventBus::EventBus() = default;
EventBus::~EventBus() = default;

EventBus::SubscriptionId EventBus::subscribe(Handler handler) {
  auto entry = std::make_shared<Entry>();
  entry->handler = std::move(handler);
  std::lock_guard<std::mutex> lock(mutex_);
  entry->id = next_id_++;
  entries_.push_back(entry);
  return entry->id;
}

namespace {
thread_local const void* t_delivering_bus = nullptr;
}  // namespace

void EventBus::unsubscribe(SubscriptionId id) {
  std::shared_ptr<Entry> entry;
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [id](const auto& e) { return e->id == id; });
  if (it == entries_.end()) return;
  entry = *it;
  entries_.erase(it);
  entry->active = false;
  // From inside a delivery on this thread we must not wait (it would wait for ourselves).
  if (t_delivering_bus == this) return;
  idle_.wait(lock, [&] { return entry->in_flight.load() == 0; });
}

void EventBus::post(const Event& event) const {
  std::vector<std::shared_ptr<Entry>> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot = entries_;
    for (auto& e : snapshot) ++e->in_flight;
  }
  const void* previous = t_delivering_bus;
  t_delivering_bus = this;
  for (auto& e : snapshot) {
    if (e->active) {
      try {
        e->handler(event);
      } catch (...) {
        // A failing observer must not break the run or other observers.
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --e->in_flight;
    idle_.notify_all();
  }
  t_delivering_bus = previous;
}

}  // namespace vidgraph::engine
