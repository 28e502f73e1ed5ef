// The Engine: validates, plans and executes a snapshot of a document on a worker thread, with a
// result cache that outlives runs, cooperative cancellation and one event bus.
//
// Run = copy the document → upgrade node types → apply overrides → validate (errors → RunStatus::
// Invalid) → plan (the targets and their ancestors, topological, document order among equals) →
// preflight (cache keys of the plan; a shared workflow's writes outside the output folder, see
// write_places.h; each uncached node's preflight hook; errors → Invalid) →
// execute each planned node: served from the cache when its key is cached (NodeCached), else computed
// (NodeStarted ... NodeFinished). A node that returns an error or throws fails the run (NodeFailed
// with its id and message, RunStatus::Failed); cancel() makes NodeContext::cancelled() true and stops
// the run before the next node (RunStatus::Cancelled). The engine stays usable after any outcome.
//
// Threading: one run at a time. start() returns immediately; events are delivered on the worker
// thread; wait() blocks until the run ends and returns its result (never call it from an event
// handler: handlers run on the worker thread; after RunFinished, wait() returns at once from any other
// thread). The destructor cancels and joins.
// The registry must outlive the engine and must not change during runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "document.h"
#include "events.h"
#include "registry.h"
#include "result.h"
#include "result_cache.h"
#include "run_options.h"
#include "value.h"

namespace vidgraph::engine {

struct EngineConfig {
  std::size_t cache_budget_bytes = std::size_t(8) << 30;  // 8 GiB
};

struct RunRequest {
  std::vector<std::string> targets;    // nodes whose outputs are wanted; empty = all sink nodes
  std::vector<std::string> overrides;  // "NODE.PARAM=VALUE" (see overrides.h)
  RunOptions options;
  bool keep_outputs = true;            // RunResult::outputs holds the targets' outputs
};

enum class NodeOutcome { Pending, Cached, Finished, Failed, Cancelled, Bypassed };

struct NodeRunStat {
  std::string node_id;
  std::string node_type;
  NodeOutcome outcome = NodeOutcome::Pending;
  double seconds = 0.0;
};

struct WrittenFile {
  std::string node_id;
  std::string path;
};

struct RunResult {
  std::uint64_t run_id = 0;
  RunStatus status = RunStatus::Succeeded;
  std::vector<Error> errors;              // Invalid: every validation error; Failed: the node's error
  std::vector<Error> warnings;            // validation warnings
  std::vector<NodeRunStat> nodes;         // plan order
  std::map<std::string, ValueMap> outputs;  // target node id → outputs (keep_outputs)
  std::vector<WrittenFile> files;         // what the nodes wrote (NodeContext::wrote), in order
  double seconds = 0.0;
};

class Engine {
 public:
  explicit Engine(const Registry& registry, EngineConfig config = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  EventBus& events() { return bus_; }
  const Registry& registry() const { return registry_; }
  ResultCache& cache() { return cache_; }

  // Starts a run of a snapshot of `doc`; refused while another run is in progress.
  Result<std::uint64_t> start(const GraphDocument& doc, RunRequest request);
  // Blocks until the current (or last) run ends; returns its result (run_id 0 if none ever started).
  RunResult wait();
  // start() + wait(); events still arrive on the worker thread.
  RunResult run(const GraphDocument& doc, RunRequest request);
  // Requests cancellation of the current run (no-op when idle). run_id 0 = whichever is running.
  void cancel(std::uint64_t run_id = 0);
  bool running() const;

 private:
  struct RunState;
  void execute(std::shared_ptr<RunState> state);

  const Registry& registry_;
  EventBus bus_;
  ResultCache cache_;
  mutable std::mutex mutex_;
  std::thread worker_;
  std::shared_ptr<RunState> current_;
  std::atomic<std::uint64_t> next_run_id_{1};
};

const char* to_string(NodeOutcome outcome);  // "pending", "cached", "finished", "failed", "cancelled", "bypassed"

}  // namespace vidgraph::engine
