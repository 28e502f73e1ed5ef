// Events of a run, and the bus that delivers them (one bus per Engine; the CLI and the GUI are its
// consumers).
//
// Order within a run: RunStarted; NodeQueued for every planned node (plan order); then per node in
// plan order either NodeCached → Preview* (the previews it posted when computed), NodeBypassed (it
// passed its inputs through, see bypass.h), or NodeStarted → NodeProgress* / Log* / Preview* → one of
// NodeFinished / NodeFailed / NodeCancelled; finally RunFinished (status). A step preview (a
// sampler's per-step image, max > 0) is replayed on a cache hit only for the last step. After a failure or cancel,
// nodes not yet run get no further events. Log events can also come from outside runs (run_id 0)
// through the spdlog sink in event_bus_sink.h.
//
// Threading: post() may be called from any thread; handlers run synchronously on the posting thread
// (the engine's worker thread during runs) — a GUI marshals them to its own thread. Handlers must be
// quick and must not call post() recursively in a loop. unsubscribe() from another thread waits until
// no delivery to that handler is in progress; from inside a handler it just stops future deliveries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node_context.h"  // LogLevel
#include "value.h"

namespace vidgraph::engine {

enum class EventKind {
  RunStarted,
  RunFinished,
  NodeQueued,
  NodeStarted,
  NodeProgress,
  NodeCached,
  NodeBypassed,
  NodeFinished,
  NodeFailed,
  NodeCancelled,
  Log,
  Preview
};

enum class RunStatus { Succeeded, Failed, Cancelled, Invalid };

struct Event {
  EventKind kind = EventKind::Log;
  std::uint64_t run_id = 0;   // 0 = not part of a run
  std::string node_id;        // node events, and Log/Preview from a node
  std::string node_type;
  std::int64_t value = 0;     // NodeProgress; RunStarted: planned node count; Preview: step (1-based)
  std::int64_t max = 0;       // NodeProgress; Preview: step count (0 = not a step preview)
  ProgressMetrics metrics;    // NodeProgress: the step's numbers by name ("loss", "lr"), if any
  std::string text;           // progress text, failure message, log line, run summary; Preview:
                              // the file a consumer saved it to (set by that consumer)
  double seconds = 0.0;       // NodeFinished/Failed/Cancelled: node time; RunFinished: run time
  RunStatus status = RunStatus::Succeeded;  // RunFinished
  LogLevel level = LogLevel::Info;          // Log
  std::string logger;                       // Log from spdlog: the logger's name ("engine", ...)
  Value preview;                            // Preview
};

const char* to_string(EventKind kind);  // "run_started", "node_progress", ...
const char* to_string(RunStatus status);  // "succeeded", "failed", "cancelled", "invalid"
const char* to_string(LogLevel level);  // "trace" ... "error"
// {"event": "...", "run_id": ..., ...}; only the fields that matter for the kind. A preview is
// described by its type and bytes (plus "step"/"steps" for a step preview and "path" when a consumer
// saved it), never its data.
nlohmann::json event_to_json(const Event& event);

class EventBus {
 public:
  using Handler = std::function<void(const Event&)>;
  using SubscriptionId = std::uint64_t;

  EventBus();
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  SubscriptionId subscribe(Handler handler);
  void unsubscribe(SubscriptionId id);
  void post(const Event& event) const;

 private:
  struct Entry;
  mutable std::mutex mutex_;
  mutable std::condition_variable idle_;
  std::vector<std::shared_ptr<Entry>> entries_;
  SubscriptionId next_id_ = 1;
};

}  // namespace vidgraph::engine
