// RunController: runs the window's document on the engine's worker thread and turns the engine's
// event bus into per-node states, log lines and preview clips on the GUI thread.
//
// Contract:
//   - start() snapshots the document (the engine copies it), so editing during a run is safe;
//   - bus events arrive on the worker thread and are marshalled to this object's thread with
//     QMetaObject::invokeMethod(..., Qt::QueuedConnection); every signal is emitted on the GUI thread;
//   - previews of type VIDEO (nodes::Video) are converted to QImages on the worker thread, so the GUI
//     thread never touches engine-owned buffers;
//   - errors (validation errors and node failures) land on the node they name (state Failed with the
//     message) and in runFinished's message;
//   - enqueue() starts a run, or queues it behind the run in progress (the document is copied then,
//     so later edits do not change it); each queued run starts when the previous one ends, also
//     when it was cancelled (cancel stops the current run only; clearQueue drops the waiting ones);
//   - the destructor drops the queue, cancels a run in progress and joins the worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include <QtCore/QObject>
#include <QtCore/QString>
#include <QtCore/QStringList>
#include <QtCore/QVariantMap>
#include <QtCore/QVector>
#include <QtGui/QImage>

#include "engine/engine.h"

namespace vidgraph::gui {

enum class NodeRunState { Idle, Queued, Running, Cached, Done, Failed, Cancelled, Bypassed };

const char* toString(NodeRunState state);  // "idle", "queued", "running", "cached", "done", ...

struct NodeStatus {
  NodeRunState state = NodeRunState::Idle;
  qint64 value = 0;
  qint64 max = 0;
  QString text;     // progress text
  QString message;  // failure message
};

struct PreviewClip {
  QVector<QImage> frames;
  double fps = 24.0;
  // The workflow of the run that posted the clip (as saved), embedded when the player exports it.
  std::string workflowJson;
  bool empty() const { return frames.isEmpty(); }
};

class RunController : public QObject {
  Q_OBJECT

 public:
  // `config`: the session's engine settings (its cache budget).
  explicit RunController(const engine::Registry& registry, engine::EngineConfig config = {},
                         QObject* parent = nullptr);
  ~RunController() override;

  // Starts a run of `doc` (targets empty = every sink node). Refused while a run is in progress.
  engine::Status start(const engine::GraphDocument& doc, const QStringList& targets = {},
                       engine::RunOptions options = {});
  // Starts now (returns 0) or after the runs already waiting (returns its place: 1 = next).
  engine::Result<int> enqueue(const engine::GraphDocument& doc, const QStringList& targets = {},
                              engine::RunOptions options = {});
  int queuedCount() const { return static_cast<int>(queue_.size()); }
  void clearQueue();
  void cancel();
  bool isRunning() const { return running_; }

  NodeStatus nodeStatus(const std::string& nodeId) const;
  // The status a node shows: its own, or for a subgraph instance (whose run ids are its inner nodes'
  // paths "id/...") their summary: failed if one failed, running while one runs or some are done
  // and others wait, else done, cached or bypassed as all are.
  NodeStatus shownStatus(const std::string& nodeId) const;
  const std::map<std::string, NodeStatus>& nodeStatuses() const { return statuses_; }
  void clearStatuses();
  // Back to idle when the node failed, or for an instance its inner nodes (its params or links were
  // edited since: the cause may be gone).
  void clearFailure(const std::string& nodeId);
  // Status of the last finished run (Succeeded before any run).
  engine::RunStatus lastStatus() const { return lastStatus_; }
  engine::Engine& engine() { return *engine_; }

 Q_SIGNALS:
  void runStarted(quint64 runId);
  void nodeStatusChanged(const QString& nodeId);
  void statusesCleared();
  // level: "trace" ... "error"; source: node id or logger name.
  void logLine(const QString& level, const QString& source, const QString& text);
  void previewReceived(const QString& nodeId, const vidgraph::gui::PreviewClip& clip);
  // A progress step that carries numbers (Train Wan's "loss" and "lr").
  void stepMetrics(const QString& nodeId, qint64 step, qint64 steps, const QVariantMap& metrics);
  // status: "succeeded", "failed", "cancelled", "invalid"; message: the first error, if any.
  void runFinished(const QString& status, const QString& message);
  void queueChanged(int waiting);

 private:
  void handleEvent(const engine::Event& event, const PreviewClip& preview);
  void finishRun(const engine::Event& event);
  void setStatus(const std::string& nodeId, NodeStatus status);
  void startNext();

  struct QueuedRun {
    engine::GraphDocument doc;
    QStringList targets;
    engine::RunOptions options;
  };
  std::deque<QueuedRun> queue_;

  std::unique_ptr<engine::Engine> engine_;
  engine::EventBus::SubscriptionId subscription_ = 0;
  std::map<std::string, NodeStatus> statuses_;
  bool running_ = false;
  std::uint64_t runId_ = 0;
  std::string runWorkflow_;  // the current run's workflow_json, given to its preview clips
  std::string runOutputDir_;  // where its history line goes (engine/run_history.h)
  std::string runSource_;     // its workflow's folder (the editor's document file is not known here)
  std::chrono::system_clock::time_point runStarted_;
  engine::RunStatus lastStatus_ = engine::RunStatus::Succeeded;
};

// Converts a preview value to frames (VIDEO values of nodes::Video; other values give an empty clip).
PreviewClip previewClipFromValue(const engine::Value& value);

}  // namespace vidgraph::gui

Q_DECLARE_METATYPE(vidgraph::gui::PreviewClip)
