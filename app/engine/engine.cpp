// The Engine: run preparation (overrides, upgrades, validation, plan) and execution on a worker
// thread with the result cache (see engine.h).
#include "engine.h"

#include <chrono>
#include <condition_variable>
#include <set>

#include "bypass.h"
#include "cache_key.h"
#include "log.h"
#include "overrides.h"
#include "plan.h"
#include "subgraph.h"
#include "validation.h"
#include "write_places.h"

namespace vidgraph::engine {

using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

const char* to_string(NodeOutcome outcome) {
  switch (outcome) {
    case NodeOutcome::Pending: return "pending";
    case NodeOutcome::Cached: return "cached";
    case NodeOutcome::Finished: return "finished";
    case NodeOutcome::Failed: return "failed";
    case NodeOutcome::Cancelled: return "cancelled";
    case NodeOutcome::Bypassed: return "bypassed";
  }
  return "pending";
}

struct Engine::RunState {
  std::uint64_t run_id = 0;
  GraphDocument doc;
  RunRequest request;
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  RunResult result;
};

Engine::Engine(const Registry& registry, EngineConfig config)
    : registry_(registry), cache_(config.cache_budget_bytes) {}

Engine::~Engine() {
  cancel();
  if (worker_.joinable()) worker_.join();
}

Result<std::uint64_t> Engine::start(const GraphDocument& doc, RunRequest request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_) {
    std::lock_guard<std::mutex> state_lock(current_->mutex);
    if (!current_->done) return make_error("a run is already in progress; wait for it or cancel it first");
  }
  if (worker_.joinable()) worker_.join();
  auto state = std::make_shared<RunState>();
  state->run_id = next_run_id_++;
  state->doc = doc;
  state->doc.set_registry(&registry_);
  state->request = std::move(request);
  state->result.run_id = state->run_id;
  current_ = state;
  worker_ = std::thread([this, state] { execute(state); });
  return state->run_id;
}

RunResult Engine::wait() {
  std::shared_ptr<RunState> state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state = current_;
  }
  if (!state) return RunResult{};
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done_cv.wait(lock, [&] { return state->done; });
  return state->result;
}

RunResult Engine::run(const GraphDocument& doc, RunRequest request) {
  auto id = start(doc, std::move(request));
  if (!id.ok()) {
    RunResult r;
    r.status = RunStatus::Invalid;
    r.errors.push_back(id.error());
    return r;
  }
  return wait();
}

void Engine::cancel(std::uint64_t run_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_ && (run_id == 0 || current_->run_id == run_id)) current_->cancel = true;
}

bool Engine::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!current_) return false;
  std::lock_guard<std::mutex> state_lock(current_->mutex);
  return !current_->done;
}

namespace {

// An exception's message for users: LibTorch's c10::Error appends its C++ backtrace after this
// marker; the backtrace belongs in a debugger, not in a node's error.
std::string message_of(const std::exception& e) {
  std::string text = e.what();
  if (const auto cut = text.find("\nException raised from "); cut != std::string::npos) text.resize(cut);
  return text;
}

// Everything one execution needs, kept out of the Engine's header.
class Runner {
 public:
  Runner(const Registry& registry, EventBus& bus, ResultCache& cache, std::uint64_t run_id,
         const std::atomic<bool>& cancel, RunResult& result)
      : registry_(registry), bus_(bus), cache_(cache), run_id_(run_id), cancel_(cancel), result_(result) {}

  // Returns the run status; events and result are filled on the way.
  RunStatus run(GraphDocument& doc, const RunRequest& request) {
    if (!prepare(doc, request)) {
      post(EventKind::RunStarted, {}, {}, [](Event& e) { e.value = 0; });
      return RunStatus::Invalid;
    }
    post(EventKind::RunStarted, {}, {}, [&](Event& e) { e.value = static_cast<std::int64_t>(plan_.size()); });
    for (const auto& id : plan_) {
      const Node* n = doc.find_node(id);
      result_.nodes.push_back(NodeRunStat{id, n->type, NodeOutcome::Pending, 0.0});
      post(EventKind::NodeQueued, id, n->type);
    }
    count_consumers(doc);
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      if (cancel_) return RunStatus::Cancelled;
      const RunStatus s = run_node(*doc.find_node(plan_[i]), result_.nodes[i], request);
      if (s != RunStatus::Succeeded) return s;
    }
    if (request.keep_outputs) {
      for (const auto& t : targets_) {
        auto it = outputs_.find(t);
        if (it != outputs_.end()) result_.outputs[t] = it->second;
      }
    }
    return RunStatus::Succeeded;
  }

  void post(EventKind kind, const std::string& node, const std::string& type,
            const std::function<void(Event&)>& fill = {}) const {
    Event e;
    e.kind = kind;
    e.run_id = run_id_;
    e.node_id = node;
    e.node_type = type;
    if (fill) fill(e);
    bus_.post(e);
  }

 private:
  bool prepare(GraphDocument& doc, const RunRequest& request) {
    if (auto s = upgrade_and_apply_overrides(doc, registry_, request.overrides); !s) {
      result_.errors.push_back(s.error());
      return false;
    }
    const std::vector<std::string> targets = expanded_targets(doc, request.targets);  // an instance: its nodes
    ValidationReport report = validate_document(doc, registry_, targets);
    result_.warnings = report.warnings;
    if (!report.ok()) {
      result_.errors = report.errors;
      return false;
    }
    const auto roots = targets.empty() ? default_targets(doc) : targets;
    if (roots.empty() && !doc.nodes().empty()) {
      result_.errors.push_back(make_error("every output node is bypassed, so nothing would run; turn bypass off "
                                          "on one of them"));
      return false;
    }
    if (!targets.empty()) {
      plan_ = std::move(report.plan);  // validation planned the targets to know what to check
    } else {
      auto plan = plan_execution(doc, roots);
      if (!plan.ok()) {
        result_.errors.push_back(plan.error());
        return false;
      }
      plan_ = std::move(plan.value());
    }
    planned_.insert(plan_.begin(), plan_.end());
    targets_.insert(roots.begin(), roots.end());
    return preflight(doc, request);
  }

  // Cache keys of the whole plan (they depend on params, fingerprints and upstream keys, not on
  // values), a shared workflow's places outside the output folder (write_places.h), then each
  // uncached node's preflight: a writer's conflict is found before the sampler spends minutes. A
  // fingerprint that throws is reported when its node runs.
  bool preflight(const GraphDocument& doc, const RunRequest& request) {
    for (const auto& id : plan_) {
      const Node& n = *doc.find_node(id);
      const NodeType& type = *registry_.find(n.type);
      if (n.bypass) {
        keys_[id] = bypass_key(n, type);
        continue;
      }
      const nlohmann::json params = type.params_with_defaults(n.params);
      // Cached or not: a shared workflow's place outside the output folder is refused every time.
      const std::vector<std::string> outside = check_confined_writes(id, type, params, request.options);
      for (const std::string& problem : outside) result_.errors.push_back(Error{id, problem});
      std::string fingerprint;
      try {
        if (type.fingerprint) fingerprint = type.fingerprint(params, request.options);
      } catch (const std::exception& e) {
        fingerprint_errors_[id] = "cannot inspect the node's inputs: " + message_of(e);
        continue;
      }
      std::map<std::string, KeyInput> key_inputs;
      for (const auto& [port, link] : n.inputs) key_inputs[port] = KeyInput{keys_[link.node], link.output};
      keys_[id] = compute_cache_key(type.name, type.version, params, fingerprint, key_inputs);
      if (!type.preflight || !outside.empty() || (!type.always_run && cache_.contains(keys_[id]))) continue;
      if (std::string problem = type.preflight(params, request.options); !problem.empty()) {
        result_.errors.push_back(Error{id, std::move(problem)});
      }
    }
    return result_.errors.empty();
  }

  // A bypassed node's key: its routes and the keys of the inputs they pass (its params play no part).
  CacheKey bypass_key(const Node& n, const NodeType& type) {
    nlohmann::json routes = nlohmann::json::object();
    std::map<std::string, KeyInput> key_inputs;
    for (const auto& [out, in] : bypass_routes(n, type)) {
      routes[out] = in;
      const InputLink& link = n.inputs.at(in);
      key_inputs[in] = KeyInput{keys_[link.node], link.output};
    }
    return compute_cache_key("bypass", 1, routes, type.name, key_inputs);
  }

  // Per planned source node: how many planned inputs read it, and which outputs they read (one pass
  // over the plan; GraphDocument::links_from scans the whole document per call).
  void count_consumers(const GraphDocument& doc) {
    for (const auto& id : plan_) {
      for (const auto& [port, link] : doc.find_node(id)->inputs) {
        ++consumers_left_[link.node];
        read_outputs_[link.node].push_back(Link{link.node, link.output, id, port});
      }
    }
  }

  void release_inputs(const Node& n, bool keep_targets) {
    for (const auto& [port, link] : n.inputs) {
      if (--consumers_left_[link.node] == 0 && !(keep_targets && targets_.count(link.node))) {
        outputs_.erase(link.node);
      }
    }
  }

  RunStatus run_node(const Node& n, NodeRunStat& stat, const RunRequest& request);
  RunStatus pass_through(const Node& n, const NodeType& type, ValueMap inputs, NodeRunStat& stat,
                         const RunRequest& request);
  RunStatus fail(NodeRunStat& stat, const Node& n, const std::string& message, Clock::time_point t0);

  const Registry& registry_;
  EventBus& bus_;
  ResultCache& cache_;
  std::uint64_t run_id_;
  const std::atomic<bool>& cancel_;
  RunResult& result_;
  std::vector<std::string> plan_;
  std::set<std::string> planned_;
  std::set<std::string> targets_;
  std::map<std::string, ValueMap> outputs_;
  std::map<std::string, CacheKey> keys_;
  std::map<std::string, std::string> fingerprint_errors_;
  std::map<std::string, int> consumers_left_;
  std::map<std::string, std::vector<Link>> read_outputs_;
};

RunStatus Runner::fail(NodeRunStat& stat, const Node& n, const std::string& message, Clock::time_point t0) {
  stat.outcome = NodeOutcome::Failed;
  stat.seconds = seconds_since(t0);
  result_.errors.push_back(Error{n.id, message});
  post(EventKind::NodeFailed, n.id, n.type, [&](Event& e) {
    e.text = message;
    e.seconds = stat.seconds;
  });
  return RunStatus::Failed;
}

RunStatus Runner::run_node(const Node& n, NodeRunStat& stat, const RunRequest& request) {
  const auto t0 = Clock::now();
  const NodeType& type = *registry_.find(n.type);
  const nlohmann::json params = type.params_with_defaults(n.params);
  if (auto it = fingerprint_errors_.find(n.id); it != fingerprint_errors_.end()) {
    return fail(stat, n, it->second, t0);
  }
  const CacheKey key = keys_.at(n.id);
  ValueMap inputs;
  for (const auto& [port, link] : n.inputs) {
    const ValueMap& src = outputs_[link.node];
    auto it = src.find(link.output);
    if (it != src.end()) inputs[port] = it->second;
  }
  if (n.bypass) return pass_through(n, type, std::move(inputs), stat, request);
  if (!type.always_run) {
    if (auto cached = cache_.get(key)) {
      outputs_[n.id] = std::move(*cached);
      stat.outcome = NodeOutcome::Cached;
      release_inputs(n, request.keep_outputs);
      post(EventKind::NodeCached, n.id, n.type);
      for (const StoredPreview& p : cache_.previews(key)) {
        post(EventKind::Preview, n.id, n.type, [&](Event& e) {
          e.preview = p.value;
          e.value = p.step;
          e.max = p.steps;
        });
      }
      return RunStatus::Succeeded;
    }
  }
  post(EventKind::NodeStarted, n.id, n.type);
  NodeContext::Hooks hooks;
  hooks.progress = [&](std::int64_t value, std::int64_t max, const std::string& text, const ProgressMetrics& metrics) {
    post(EventKind::NodeProgress, n.id, n.type, [&](Event& e) {
      e.value = value;
      e.max = max;
      e.text = text;
      e.metrics = metrics;
    });
  };
  hooks.cancelled = [this] { return cancel_.load(); };
  hooks.log = [&](LogLevel level, const std::string& line) {
    post(EventKind::Log, n.id, n.type, [&](Event& e) {
      e.level = level;
      e.text = line;
    });
  };
  std::vector<StoredPreview> previews;  // kept with the cached result, posted again on a cache hit
  hooks.preview = [&](const Value& v) {
    previews.push_back(StoredPreview{v});
    post(EventKind::Preview, n.id, n.type, [&](Event& e) { e.preview = v; });
  };
  hooks.step_preview = [&](const Value& v, std::int64_t step, std::int64_t steps) {
    if (step == steps) previews.push_back(StoredPreview{v, step, steps});  // the final estimate only
    post(EventKind::Preview, n.id, n.type, [&](Event& e) {
      e.preview = v;
      e.value = step;
      e.max = steps;
    });
  };
  hooks.wrote = [&](const std::string& path) { result_.files.push_back(WrittenFile{n.id, path}); };
  NodeContext ctx(n.id, type.name, std::move(inputs), params, request.options, std::move(hooks));
  Result<ValueMap> out = make_error("");
  try {
    out = type.compute(ctx);
  } catch (const std::exception& e) {
    out = make_error(message_of(e));
  } catch (...) {
    out = make_error("the node threw an unknown exception");
  }
  if (!out.ok() && cancel_) {
    stat.outcome = NodeOutcome::Cancelled;
    stat.seconds = seconds_since(t0);
    post(EventKind::NodeCancelled, n.id, n.type, [&](Event& e) { e.seconds = stat.seconds; });
    return RunStatus::Cancelled;
  }
  if (!out.ok()) {
    const std::string msg = out.error().message.empty() ? "the node failed without a message" : out.error().message;
    return fail(stat, n, msg, t0);
  }
  ValueMap values = std::move(out.value());
  for (const PortSpec& port : type.outputs) {
    auto it = values.find(port.name);
    if (it != values.end() && it->second.type.empty()) it->second.type = port.type;
  }
  for (const Link& l : read_outputs_[n.id]) {
    if (values.count(l.from_output)) continue;
    const PortSpec* port = type.find_output(l.from_output);
    if (port != nullptr && port->optional) {  // absent by design for these params: say what it is
      return fail(stat, n, "the node has no '" + l.from_output + "' to give '" + l.to_node + "' with these params (" +
                               port->description + "); remove the link or load a model that has one", t0);
    }
    return fail(stat, n, "the node did not produce output '" + l.from_output + "', which '" + l.to_node +
                             "' needs; this is a bug in the node type " + type.name, t0);
  }
  if (!type.always_run) cache_.put(key, values, std::move(previews));
  outputs_[n.id] = std::move(values);
  stat.outcome = NodeOutcome::Finished;
  stat.seconds = seconds_since(t0);
  release_inputs(n, request.keep_outputs);
  post(EventKind::NodeFinished, n.id, n.type, [&](Event& e) { e.seconds = stat.seconds; });
  return RunStatus::Succeeded;
}

RunStatus Runner::pass_through(const Node& n, const NodeType& type, ValueMap inputs, NodeRunStat& stat,
                               const RunRequest& request) {
  ValueMap values;
  for (const auto& [out, in] : bypass_routes(n, type)) {
    if (auto it = inputs.find(in); it != inputs.end()) values[out] = it->second;
  }
  outputs_[n.id] = std::move(values);
  stat.outcome = NodeOutcome::Bypassed;
  release_inputs(n, request.keep_outputs);
  post(EventKind::NodeBypassed, n.id, n.type);
  return RunStatus::Succeeded;
}

}  // namespace

void Engine::execute(std::shared_ptr<RunState> state) {
  const auto t0 = Clock::now();
  RunResult result;
  result.run_id = state->run_id;
  Runner runner(registry_, bus_, cache_, state->run_id, state->cancel, result);
  RunStatus status = RunStatus::Failed;
  try {
    status = runner.run(state->doc, state->request);
  } catch (const std::exception& e) {
    result.errors.push_back(make_error("internal error during the run: " + message_of(e)));
  }
  result.status = status;
  result.seconds = seconds_since(t0);
  engine_logger()->debug("run {} {} in {:.3f} s", state->run_id, to_string(status), result.seconds);
  std::string message = result.errors.empty() ? std::string() : result.errors.front().to_string();
  runner.post(EventKind::RunFinished, {}, {}, [&](Event& e) {
    e.status = status;
    e.seconds = result.seconds;
    e.text = message;
  });
  std::lock_guard<std::mutex> lock(state->mutex);
  state->result = std::move(result);
  state->done = true;
  state->done_cv.notify_all();
}

}  // namespace vidgraph::engine
