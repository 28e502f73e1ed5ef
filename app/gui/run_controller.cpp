// RunController (see run_controller.h).
#include "gui/run_controller.h"

#include <QtCore/QMetaObject>

#include "engine/run_history.h"
#include "engine/workflow_file.h"
#include "gui/gui_log.h"
#include "nodes/value_types.h"

namespace vidgraph::gui {

const char* toString(NodeRunState state) {
  switch (state) {
    case NodeRunState::Idle: return "idle";
    case NodeRunState::Queued: return "queued";
    case NodeRunState::Running: return "running";
    case NodeRunState::Cached: return "cached";
    case NodeRunState::Done: return "done";
    case NodeRunState::Failed: return "failed";
    case NodeRunState::Cancelled: return "cancelled";
    case NodeRunState::Bypassed: return "bypassed";
  }
  return "idle";
}

PreviewClip previewClipFromValue(const engine::Value& value) {
  PreviewClip clip;
  const auto* video = engine::value_as<nodes::Video>(value);
  if (!video || !video->frames.consistent()) return clip;
  const nodes::Frames& f = video->frames;
  clip.fps = video->fps > 0 ? video->fps : 24.0;
  clip.frames.reserve(f.count);
  for (int i = 0; i < f.count; ++i) {
    // [H, W, 3] uint8 rows; copy() detaches from the engine's buffer.
    QImage frame(f.frame(i), f.width, f.height, f.width * 3, QImage::Format_RGB888);
    clip.frames.push_back(frame.copy());
  }
  return clip;
}

RunController::RunController(const engine::Registry& registry, engine::EngineConfig config, QObject* parent)
    : QObject(parent), engine_(std::make_unique<engine::Engine>(registry, config)) {
  qRegisterMetaType<PreviewClip>();
  subscription_ = engine_->events().subscribe([this](const engine::Event& event) {
    // Worker thread: copy what the GUI needs, convert previews here, hand over to the GUI thread.
    PreviewClip clip;
    engine::Event copy = event;
    if (event.kind == engine::EventKind::Preview) clip = previewClipFromValue(event.preview);
    copy.preview = engine::Value{};
    QMetaObject::invokeMethod(this, [this, copy, clip] { handleEvent(copy, clip); }, Qt::QueuedConnection);
  });
}

RunController::~RunController() {
  queue_.clear();
  engine_->events().unsubscribe(subscription_);
  engine_.reset();  // cancels and joins the worker
}

engine::Status RunController::start(const engine::GraphDocument& doc, const QStringList& targets,
                                    engine::RunOptions options) {
  if (running_ || engine_->running()) {
    return engine::make_error("a run is already in progress; wait for it or cancel it first");
  }
  engine::RunRequest request;
  for (const QString& t : targets) request.targets.push_back(t.toStdString());
  if (options.workflow_json.empty()) options.workflow_json = engine::save_workflow_string(doc);
  const std::string workflow = options.workflow_json;
  const std::string output_dir = options.output_directory();
  const std::string source = options.workflow_dir;
  request.options = std::move(options);
  request.keep_outputs = false;
  clearStatuses();
  auto id = engine_->start(doc, std::move(request));
  if (!id.ok()) return id.error();
  running_ = true;
  runId_ = id.value();
  runWorkflow_ = workflow;
  runOutputDir_ = output_dir;
  runSource_ = source;
  runStarted_ = std::chrono::system_clock::now();
  return {};
}

engine::Result<int> RunController::enqueue(const engine::GraphDocument& doc, const QStringList& targets,
                                           engine::RunOptions options) {
  if (!running_) {
    auto status = start(doc, targets, std::move(options));
    if (!status.ok()) return status.error();
    return 0;
  }
  queue_.push_back(QueuedRun{doc, targets, std::move(options)});
  Q_EMIT queueChanged(queuedCount());
  return queuedCount();
}

void RunController::clearQueue() {
  if (queue_.empty()) return;
  queue_.clear();
  Q_EMIT queueChanged(0);
}

void RunController::startNext() {
  while (!running_ && !queue_.empty()) {
    QueuedRun next = std::move(queue_.front());
    queue_.pop_front();
    Q_EMIT queueChanged(queuedCount());
    auto status = start(next.doc, next.targets, std::move(next.options));
    if (!status.ok()) Q_EMIT runFinished(QStringLiteral("invalid"), QString::fromStdString(status.error().message));
  }
}

void RunController::cancel() {
  if (running_) engine_->cancel(runId_);
}

NodeStatus RunController::nodeStatus(const std::string& nodeId) const {
  auto it = statuses_.find(nodeId);
  return it == statuses_.end() ? NodeStatus{} : it->second;
}

NodeStatus RunController::shownStatus(const std::string& nodeId) const {
  if (auto it = statuses_.find(nodeId); it != statuses_.end()) return it->second;
  const std::string prefix = nodeId + "/";
  std::map<NodeRunState, const std::pair<const std::string, NodeStatus>*> first;  // the first inner node in each state
  for (auto it = statuses_.lower_bound(prefix); it != statuses_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    first.emplace(it->second.state, &*it);
  }
  // An inner node's progress and failure name it: "sampler: step 3/8".
  const auto named = [&](NodeRunState state) {
    const auto& [id, status] = *first.at(state);
    NodeStatus shown = status;
    const QString inner = QString::fromStdString(id.substr(prefix.size()));
    if (!shown.text.isEmpty()) shown.text = inner + QStringLiteral(": ") + shown.text;
    if (!shown.message.isEmpty()) shown.message = inner + QStringLiteral(": ") + shown.message;
    return shown;
  };
  using S = NodeRunState;
  for (S state : {S::Failed, S::Running, S::Cancelled}) {
    if (first.count(state)) return named(state);
  }
  const bool someFinished = first.count(S::Done) || first.count(S::Cached) || first.count(S::Bypassed);
  if (first.count(S::Queued)) return NodeStatus{someFinished ? S::Running : S::Queued, 0, 0, {}, {}};
  for (S state : {S::Done, S::Cached, S::Bypassed}) {
    if (first.count(state)) return NodeStatus{state, 0, 0, {}, {}};
  }
  return NodeStatus{};
}

void RunController::clearStatuses() {
  statuses_.clear();
  Q_EMIT statusesCleared();
}

void RunController::clearFailure(const std::string& nodeId) {
  if (running_) return;
  const std::string prefix = nodeId + "/";
  for (auto it = statuses_.begin(); it != statuses_.end();) {
    const bool within = it->first == nodeId || it->first.rfind(prefix, 0) == 0;
    if (!within || it->second.state != NodeRunState::Failed) {
      ++it;
      continue;
    }
    const QString id = QString::fromStdString(it->first);
    it = statuses_.erase(it);
    Q_EMIT nodeStatusChanged(id);
  }
}

void RunController::setStatus(const std::string& nodeId, NodeStatus status) {
  statuses_[nodeId] = std::move(status);
  Q_EMIT nodeStatusChanged(QString::fromStdString(nodeId));
}

void RunController::handleEvent(const engine::Event& e, const PreviewClip& preview) {
  using engine::EventKind;
  if (e.run_id != 0 && e.run_id != runId_) return;  // a stale event of an older run
  const QString node = QString::fromStdString(e.node_id);
  NodeStatus s = nodeStatus(e.node_id);
  switch (e.kind) {
    case EventKind::RunStarted: Q_EMIT runStarted(e.run_id); break;
    case EventKind::RunFinished: finishRun(e); break;
    case EventKind::NodeQueued: setStatus(e.node_id, NodeStatus{NodeRunState::Queued, 0, 0, {}, {}}); break;
    case EventKind::NodeStarted: setStatus(e.node_id, NodeStatus{NodeRunState::Running, 0, 0, {}, {}}); break;
    case EventKind::NodeProgress:
      s.state = NodeRunState::Running;
      s.value = e.value;
      s.max = e.max;
      s.text = QString::fromStdString(e.text);
      setStatus(e.node_id, s);
      if (!e.metrics.empty()) {
        QVariantMap metrics;
        for (const auto& [name, number] : e.metrics) metrics.insert(QString::fromStdString(name), number);
        Q_EMIT stepMetrics(node, e.value, e.max, metrics);
      }
      break;
    case EventKind::NodeCached: setStatus(e.node_id, NodeStatus{NodeRunState::Cached, 0, 0, {}, {}}); break;
    case EventKind::NodeBypassed: setStatus(e.node_id, NodeStatus{NodeRunState::Bypassed, 0, 0, {}, {}}); break;
    case EventKind::NodeFinished: setStatus(e.node_id, NodeStatus{NodeRunState::Done, s.max, s.max, {}, {}}); break;
    case EventKind::NodeFailed:
      setStatus(e.node_id, NodeStatus{NodeRunState::Failed, s.value, s.max, {}, QString::fromStdString(e.text)});
      Q_EMIT logLine(QStringLiteral("error"), node, QString::fromStdString(e.text));
      break;
    case EventKind::NodeCancelled:
      setStatus(e.node_id, NodeStatus{NodeRunState::Cancelled, s.value, s.max, {}, {}});
      break;
    case EventKind::Log:
      Q_EMIT logLine(QString::fromLatin1(engine::to_string(e.level)),
                     node.isEmpty() ? QString::fromStdString(e.logger) : node, QString::fromStdString(e.text));
      break;
    case EventKind::Preview:
      if (!preview.empty()) {
        PreviewClip clip = preview;
        clip.workflowJson = runWorkflow_;
        Q_EMIT previewReceived(node, clip);
      }
      break;
  }
}

void RunController::finishRun(const engine::Event& e) {
  // RunFinished is posted just before the engine marks the run done: wait() returns at once.
  const engine::RunResult result = engine_->wait();
  running_ = false;
  lastStatus_ = e.status;
  for (const engine::Error& err : result.errors) {
    if (err.node_id.empty()) continue;
    NodeStatus s = nodeStatus(err.node_id);
    if (s.state == NodeRunState::Failed && !s.message.isEmpty()) continue;
    s.state = NodeRunState::Failed;
    s.message = QString::fromStdString(err.message);
    setStatus(err.node_id, s);
  }
  // Planned nodes that never ran after a failure or cancel go back to idle.
  for (auto& [id, s] : statuses_) {
    if (s.state == NodeRunState::Queued || s.state == NodeRunState::Running) {
      s.state = e.status == engine::RunStatus::Cancelled ? NodeRunState::Cancelled : NodeRunState::Idle;
      Q_EMIT nodeStatusChanged(QString::fromStdString(id));
    }
  }
  QString message = QString::fromStdString(e.text);
  if (result.errors.size() > 1) {
    QStringList all;
    for (const auto& err : result.errors) all << QString::fromStdString(err.to_string());
    message = all.join(QLatin1Char('\n'));
  }
  guiLogger()->info("run {} {} in {:.2f} s", e.run_id, engine::to_string(e.status), e.seconds);
  if (e.status != engine::RunStatus::Invalid) {
    const auto entry = engine::run_history_entry(result, runWorkflow_, runSource_, runStarted_);
    if (auto written = engine::append_run_history(runOutputDir_, entry); !written.ok()) {
      guiLogger()->warn("{}", written.error().message);
    }
  }
  Q_EMIT runFinished(QString::fromLatin1(engine::to_string(e.status)), message);
  startNext();
}

}  // namespace vidgraph::gui
