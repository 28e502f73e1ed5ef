// MainWindow: one document per window. The canvas in the centre; docks for the inspector, the
// preview player and the log. Menus with standard shortcuts for files (new, open, recent, save,
// save as, open example), edits (undo, redo, cut, copy, paste, duplicate, delete, select all, add node), view
// (fit, zoom) and runs (run, run to selected, cancel, clear queue; also on the Run toolbar with the
// run state), right-click menus on nodes, wires and the canvas. Drag-and-drop of .vgflow files, an
// unsaved-changes prompt, autosave with a restore offer, window state kept in QSettings.
//
// Contract: the window owns its DocumentController, RunController, scene and Autosave; every edit
// goes through the controller, every run through the run controller.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include <QtCore/QStringList>
#include <QtWidgets/QMainWindow>

#include "engine/engine.h"
#include "engine/registry.h"
#include "engine/run_options.h"
#include "gui/document_controller.h"
#include "gui/graph_scene.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QToolBar;

namespace vidgraph::gui {

class Autosave;
class ConnectionItem;
class GraphView;
class GroupItem;
class RerouteItem;
class HistoryPanel;
class InspectorPanel;
class LogPanel;
class LossChart;
class LogSink;
class NodePalette;
class PreviewPlayer;
class RunController;

struct MainWindowOptions {
  QString recoveryDir;          // empty = Autosave::defaultRecoveryDir()
  int autosaveIntervalMs = 30000;
  bool restoreWindowState = true;
  QString examplesDir;          // empty = <resources>/workflows (the shipped workflows)
  QString attentionPlugin;      // the session's plugin for About (Session::attention_plugin_description)
  engine::EngineConfig engine;  // the session's engine settings (Session::engine_config)
  engine::RunOptions runDefaults;  // what every run starts from (Session::run_options: resources folder)
};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow(const engine::Registry& registry, MainWindowOptions options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  DocumentController* controller() const { return controller_; }
  RunController* runController() const { return run_; }
  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  InspectorPanel* inspector() const { return inspector_; }
  PreviewPlayer* player() const { return player_; }
  LossChart* lossChart() const { return lossChart_; }
  HistoryPanel* historyPanel() const { return history_; }
  NodePalette* palette() const { return palette_; }
  LogPanel* logPanel() const { return log_; }
  Autosave* autosave() const { return autosave_; }

  // Sends the program's log lines to this window's log panel until the window is destroyed.
  void attachLogSink(std::shared_ptr<LogSink> sink);

  // ---- file actions (no dialogs except the error boxes; the menu actions add the dialogs)
  // A workflow file, or an output Vidgraph wrote (MP4/WebM, PNG-sequence folder): its embedded
  // workflow opens untitled.
  bool openFile(const QString& path);
  bool saveTo(const QString& path);
  // Asks about unsaved changes: true when it is fine to drop the document (saved or discarded).
  bool maybeSave();
  // Offers to restore recovery files left by a crash; returns true when one was restored.
  bool offerRecovery();
  // Start-up: offers crash recovery first (also when files were given on the command line), then
  // opens the first file unless recovered work now fills the window (then it says so in the log).
  void startUp(const QStringList& files);
  QStringList recentFiles() const;
  // The shipped example workflows (File ▸ Open Example). An example opens as an untitled copy.
  QString examplesDir() const;
  bool openExample(const QString& path);
  // A run's workflow from the History panel, as an untitled document; runs it when `run`.
  bool openHistoryRun(const QString& workflow, const QString& label, bool run);
  // Where the Open dialog starts: the folder of the most recent file, else the examples folder.
  QString openDialogDir() const;
  // The folder of the latest recent file that still exists; empty when none does.
  QString recentFolder() const;
  // Where Save As starts: the document's file, else a recent file's folder, else Documents.
  QString saveDialogPath() const;

  // ---- edit and run actions
  void copySelection();
  void cutSelection();
  void pasteClipboard();
  void duplicateSelection();
  void deleteSelection();
  // Bypasses the selected nodes (engine/bypass.h), or turns bypass off when all of them are.
  void toggleBypassSelection();
  // Collapses the selected nodes to their title bars, or expands them when all are collapsed.
  void toggleCollapseSelection();
  // Puts a group ("Group") around the selected nodes; the group menu renames or deletes it.
  void groupSelection();
  // Runs the document (targets empty = every output), or queues the run behind the one in progress;
  // runToSelected runs up to the selected nodes. Cancel stops the current run; queued ones follow.
  bool runWorkflow(const QStringList& targets = {});
  bool runToSelected();
  void cancelRun();
  void fitView();
  void pasteClipboardAt(QPointF scenePos);
  // Where runs write ({output}): ~/Videos/Vidgraph, or ~/Vidgraph without a videos folder.
  QString outputDir() const;
  // The folder of a node's first non-empty file param ({output} and relative paths resolved as a
  // run resolves them), or "" when it has none. Node menu: Show in Folder.
  QString fileFolderOf(const std::string& id) const;
  // The right-click menu at a view position: on a node (it joins the selection; the actions apply to
  // the selection: run to here, duplicate, disconnect all, delete), on a wire (insert a node, delete
  // the link), inside a group (rename it, delete it keeping its nodes, then the canvas's actions) or
  // on the canvas (add node there, paste there, fit). The caller shows or deletes it.
  QMenu* contextMenuAt(QPoint viewPos);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildDocks();
  void buildMenus();
  void buildFileMenu();
  void buildEditMenu();
  void buildViewMenu(QMenu* docks);
  void buildRunMenu();
  void connectSignals();
  // The breadcrumb above the canvas while a subgraph is open: the workflow, then each subgraph
  // entered; a crumb goes back to its level. Hidden at the workflow.
  void buildBreadcrumbBar();
  void rebuildBreadcrumb();
  // The node menu's subgraph actions for `ids`: open an instance; inside a subgraph, expose or
  // unexpose a param of the node.
  void addSubgraphActions(QMenu* menu, const std::vector<std::string>& ids);
  void openPalette(QPointF scenePos, const std::optional<WireDrop>& wire,
                   std::optional<std::pair<std::string, QString>> insertInto = std::nullopt);
  void showContextMenu(QPoint viewPos);
  QMenu* nodeMenu();
  QMenu* wireMenu(ConnectionItem* wire, QPointF scenePos);
  QMenu* canvasMenu(QPointF scenePos);
  QMenu* groupMenu(GroupItem* group, QPointF scenePos);
  QMenu* rerouteMenu(RerouteItem* dot);
  void renameGroup(int index, const QString& current);
  void onNodeChosen(const QString& type, const QString& port);
  void updateTitle();
  void updateRunActions();
  void addRecentFile(const QString& path);
  void rebuildRecentMenu();
  void rebuildExamplesMenu();
  engine::Status openWorkflowOrOutput(const QString& path, QString* embeddedIn);
  // A workflow from a shared file writes only inside the output folder (engine/write_places.h)
  // unless the user, shown every place outside it, says yes (default No). Sets `options`'
  // confinement; false when the user declined and nothing should run.
  bool confirmOutsideWrites(const engine::GraphDocument& workflow, engine::RunOptions& options);
  void showError(const QString& title, const QString& text);
  // After opening an untitled document: the error box, or fresh run states, the view fitted and
  // `message` in the status bar. True when `status` is ok.
  bool showOpenedUntitled(const engine::Status& status, const QString& errorTitle, const QString& message);
  void newDocument();
  void openWithDialog();
  bool save();
  bool saveAs();
  void restoreSettings();
  void saveSettings();

  const engine::Registry& registry_;
  MainWindowOptions options_;
  DocumentController* controller_;
  RunController* run_;
  GraphScene* scene_;
  GraphView* view_;
  InspectorPanel* inspector_ = nullptr;
  PreviewPlayer* player_ = nullptr;
  LogPanel* log_ = nullptr;
  NodePalette* palette_;
  Autosave* autosave_;
  std::shared_ptr<LogSink> logSink_;
  QDockWidget* previewDock_ = nullptr;
  LossChart* lossChart_ = nullptr;
  HistoryPanel* history_ = nullptr;
  QDockWidget* trainingDock_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QMenu* examplesMenu_ = nullptr;
  QAction* runAction_ = nullptr;
  QAction* runSelectedAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* clearQueueAction_ = nullptr;
  QLabel* runStateLabel_ = nullptr;
  QToolBar* breadcrumbBar_ = nullptr;
  QPointF paletteScenePos_;
  // The shared file (video, PNG sequence) the open workflow came inside; "" for a workflow file,
  // an example or a new document. Such a workflow is untrusted (confirmOutsideWrites).
  std::optional<WireDrop> paletteWire_;
  std::optional<std::pair<std::string, QString>> paletteInsert_;  // the link (to node, input) to insert into
};

}  // namespace vidgraph::gui
