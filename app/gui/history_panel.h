// HistoryPanel: the runs of the editor's output folder, newest first — the same history
// vidgraph-run keeps (engine/run_history.h): a thumbnail of the first video each wrote (its first
// frame, decoded once while the file is unchanged), when it started, its status, time and files. Open
// puts a run's workflow in the editor as an untitled document with the values it ran with; Run again
// does that and runs it; Compare settings shows the params the two selected runs differ in, Compare
// videos asks for their videos side by side.
// Re-read when a run ends and on Refresh.
#pragma once

#include <vector>

#include <QtCore/QHash>
#include <QtGui/QPixmap>
#include <QtWidgets/QWidget>
#include <nlohmann/json.hpp>

class QLabel;
class QPushButton;
class QTreeWidget;

namespace vidgraph::gui {

class HistoryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit HistoryPanel(QWidget* parent = nullptr);

  void setFolder(const QString& folder);  // reads its history
  void refresh();
  int runCount() const { return static_cast<int>(runs_.size()); }
  QTreeWidget* list() const { return list_; }
  // What Compare settings shows for the two selected runs (older first), a line per difference.
  QString compareSelected() const;

 Q_SIGNALS:
  // `workflow` is a workflow file's JSON; `label` names the run in the editor.
  void openRun(const QString& workflow, const QString& label, bool runAfterOpening);
  // The first video each of the two selected runs wrote (older run first).
  void compareVideos(const QString& first, const QString& second, const QString& label);

 private:
  std::vector<int> selectedRuns() const;  // indexes into runs_, oldest first
  void openSelected(bool runAfterOpening);
  void updateButtons();
  void compareSelectedVideos();
  // The video's first frame as a list icon (null when there is no video or it cannot be read).
  QPixmap thumbnailOf(const QString& video);

  static constexpr int kThumbnailHeight = 36;

  QString folder_;
  std::vector<nlohmann::json> runs_;  // oldest first, as read
  QHash<QString, QPixmap> thumbnails_;  // "path|mtime" → thumbnail
  QTreeWidget* list_;
  QPushButton* open_;
  QPushButton* rerun_;
  QPushButton* compare_;
  QPushButton* compareVideos_;
  QLabel* note_;
};

}  // namespace vidgraph::gui
