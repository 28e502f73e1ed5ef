// MainWindow: layout, menus, edit and run actions (see main_window.h). File handling, settings and
// recovery live in main_window_files.cpp.
#include "gui/main_window.h"

#include <algorithm>
#include <set>

#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QMimeData>
#include <QtCore/QPointer>
#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtGui/QClipboard>
#include <QtGui/QGuiApplication>
#include <QtWidgets/QApplication>
#include <QtWidgets/QDockWidget>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QToolBar>

#include "engine/write_places.h"
#include "gui/about_dialog.h"
#include "gui/app_icon.h"
#include "gui/autosave.h"
#include "gui/clipboard_json.h"
#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/group_item.h"
#include "gui/history_panel.h"
#include "gui/inspector_panel.h"
#include "gui/log_panel.h"
#include "gui/loss_chart.h"
#include "gui/log_sink.h"
#include "gui/minimap.h"
#include "gui/node_palette.h"
#include "gui/preview_player.h"
#include "gui/run_compare.h"
#include "gui/run_controller.h"

namespace vidgraph::gui {

MainWindow::MainWindow(const engine::Registry& registry, MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent),
      registry_(registry),
      options_(std::move(options)),
      controller_(new DocumentController(registry, this)),
      run_(new RunController(registry, options_.engine, this)),
      scene_(new GraphScene(controller_, this)),
      view_(new GraphView(this)),
      palette_(new NodePalette(registry, this)),
      autosave_(new Autosave(controller_, options_.recoveryDir, options_.autosaveIntervalMs, this)) {
  setObjectName(QStringLiteral("vidgraphMainWindow"));
  setWindowIcon(appIcon());
  setAcceptDrops(true);
  scene_->setRunController(run_);
  view_->setScene(scene_);
  setCentralWidget(view_);
  buildDocks();
  buildMenus();
  buildBreadcrumbBar();
  connectSignals();
  // The hint comes back whenever a timed message (saved, opened, run finished…) has gone.
  const QString hint = tr("Tab or double-click: add a node · drag from a port: connect · wheel: zoom · "
                          "middle/right drag: pan");
  connect(statusBar(), &QStatusBar::messageChanged, this, [this, hint](const QString& text) {
    if (text.isEmpty()) statusBar()->showMessage(hint);
  });
  statusBar()->showMessage(hint);
  view_->setEmptyHint(tr("An empty workflow.\nTab or double-click: add a node\n"
                         "File ▸ Open Example: a ready workflow · or drop a .vgflow file here"));
  connect(controller_, &DocumentController::documentChanged, view_->viewport(), qOverload<>(&QWidget::update));
  resize(1400, 860);
  if (options_.restoreWindowState) restoreSettings();
  updateTitle();
  updateRunActions();
}

MainWindow::~MainWindow() {
  if (logSink_) logSink_->setReceiver({});
  // Children are deleted after this body (by ~QWidget) and may signal while they go (the
  // controller's undo stack says it is clean again): nothing may reach this half-destroyed window.
  for (QObject* child : findChildren<QObject*>()) disconnect(child, nullptr, this, nullptr);
  // The scene observes the controller: tear it down first, while the controller still exists.
  disconnect(scene_, nullptr, this, nullptr);
  view_->setScene(nullptr);
  delete scene_;
  scene_ = nullptr;
}

void MainWindow::attachLogSink(std::shared_ptr<LogSink> sink) {
  logSink_ = std::move(sink);
  QPointer<LogPanel> panel(log_);
  logSink_->setReceiver([panel](const QString& level, const QString& logger, const QString& text) {
    if (!panel) return;
    QMetaObject::invokeMethod(panel, [panel, level, logger, text] {
      if (panel) panel->appendLine(level, logger, text);
    }, Qt::QueuedConnection);
  });
}

void MainWindow::buildDocks() {
  inspector_ = new InspectorPanel(controller_, options_.runDefaults, this);
  auto* inspectorDock = new QDockWidget(tr("Inspector"), this);
  inspectorDock->setObjectName(QStringLiteral("inspectorDock"));
  inspectorDock->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);

  player_ = new PreviewPlayer(this);
  previewDock_ = new QDockWidget(tr("Preview"), this);
  previewDock_->setObjectName(QStringLiteral("previewDock"));
  previewDock_->setWidget(player_);
  addDockWidget(Qt::RightDockWidgetArea, previewDock_);

  log_ = new LogPanel(this);
  auto* logDock = new QDockWidget(tr("Log"), this);
  logDock->setObjectName(QStringLiteral("logDock"));
  logDock->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock);
  lossChart_ = new LossChart(this);
  trainingDock_ = new QDockWidget(tr("Training"), this);
  trainingDock_->setObjectName(QStringLiteral("trainingDock"));
  trainingDock_->setWidget(lossChart_);
  addDockWidget(Qt::BottomDockWidgetArea, trainingDock_);
  splitDockWidget(logDock, trainingDock_, Qt::Horizontal);
  trainingDock_->hide();  // shown when a run posts training steps
  history_ = new HistoryPanel(this);
  auto* historyDock = new QDockWidget(tr("History"), this);
  historyDock->setObjectName(QStringLiteral("historyDock"));
  historyDock->setWidget(history_);
  addDockWidget(Qt::BottomDockWidgetArea, historyDock);
  tabifyDockWidget(logDock, historyDock);
  logDock->raise();
  history_->setFolder(outputDir());
  connect(history_, &HistoryPanel::openRun, this, [this](const QString& workflow, const QString& label, bool run) {
    openHistoryRun(workflow, label, run);
  });
  connect(history_, &HistoryPanel::compareVideos, this,
          [this](const QString& first, const QString& second, const QString& label) {
            auto clip = side_by_side_clip(first, second);
            if (!clip.ok()) {
              showError(tr("Cannot compare the videos"), QString::fromStdString(clip.error().message));
              return;
            }
            player_->setClip(QStringLiteral("history"), *clip);
            previewDock_->show();
            previewDock_->raise();
            statusBar()->showMessage(tr("Comparing %1 in the preview (%2 frames).").arg(label).arg(clip->frames.size()),
                                     8000);
          });
  resizeDocks({inspectorDock, previewDock_}, {420, 360}, Qt::Vertical);
  resizeDocks({inspectorDock}, {400}, Qt::Horizontal);
  resizeDocks({logDock}, {150}, Qt::Vertical);
  resizeDocks({logDock, trainingDock_}, {3, 2}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
  buildFileMenu();
  buildEditMenu();
  QMenu* docks = new QMenu(tr("&Panels"), this);
  for (QDockWidget* dock : findChildren<QDockWidget*>()) docks->addAction(dock->toggleViewAction());
  buildViewMenu(docks);
  buildRunMenu();
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Vidgraph"), this, [this] { AboutDialog(&registry_, options_.attentionPlugin, this).exec(); });
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::buildEditMenu() {
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = controller_->undoGroup()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
  QAction* redo = controller_->undoGroup()->createRedoAction(this, tr("&Redo"));
  redo->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  edit->addAction(tr("Cu&t"), QKeySequence(Qt::CTRL | Qt::Key_X), this, &MainWindow::cutSelection);
  edit->addAction(tr("&Copy"), QKeySequence(Qt::CTRL | Qt::Key_C), this, &MainWindow::copySelection);
  edit->addAction(tr("&Paste"), QKeySequence(Qt::CTRL | Qt::Key_V), this, &MainWindow::pasteClipboard);
  edit->addAction(tr("&Duplicate"), QKeySequence(Qt::CTRL | Qt::Key_D), this, &MainWindow::duplicateSelection);
  QAction* del = edit->addAction(tr("De&lete"), this, &MainWindow::deleteSelection);
  del->setShortcuts({QKeySequence(Qt::Key_Delete), QKeySequence(Qt::Key_Backspace)});
  edit->addAction(tr("&Bypass"), QKeySequence(Qt::CTRL | Qt::Key_B), this, &MainWindow::toggleBypassSelection);
  edit->addAction(tr("C&ollapse / Expand"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), this,
                  &MainWindow::toggleCollapseSelection);
  edit->addAction(tr("&Group Selection"), QKeySequence(Qt::CTRL | Qt::Key_G), this, &MainWindow::groupSelection);
  edit->addAction(tr("&Upgrade Node Types"), this, [this] {
    auto ids = controller_->upgradeNodeTypes();
    statusBar()->showMessage(!ids.ok() ? QString::fromStdString(ids.error().to_string())
                             : ids->empty() ? tr("Every node already uses its current type version.")
                                            : tr("Upgraded %n node(s).", nullptr, int(ids->size())), 6000);
  });
  edit->addSeparator();
  edit->addAction(tr("Select &All"), QKeySequence(Qt::CTRL | Qt::Key_A), this, [this] {
    for (QGraphicsItem* item : scene_->items()) {
      if (item->type() == NodeItem::Type) item->setSelected(true);
    }
  });
  edit->addAction(tr("&Add Node…"), QKeySequence(Qt::Key_Tab), this,
                  [this] { openPalette(view_->cursorScenePos(), std::nullopt); })
      ->setShortcutContext(Qt::WidgetShortcut);  // the canvas handles Tab itself
}

void MainWindow::toggleBypassSelection() {
  const auto ids = scene_->selectedNodeIds();
  // Mixed selections become all bypassed; only an all-bypassed selection is turned back on.
  const bool bypass = std::any_of(ids.begin(), ids.end(), [this](const std::string& id) {
    const engine::Node* n = controller_->document().find_node(id);
    return n && !n->bypass;
  });
  auto status = controller_->setBypass(ids, bypass);
  if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
}

void MainWindow::toggleCollapseSelection() {
  const auto ids = scene_->selectedNodeIds();
  const bool collapse = std::any_of(ids.begin(), ids.end(), [this](const std::string& id) {
    return !controller_->isCollapsed(id);
  });
  auto status = controller_->setCollapsed(ids, collapse);
  if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
}

void MainWindow::buildViewMenu(QMenu* docks) {
  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  viewMenu->addAction(tr("&Fit to Nodes"), QKeySequence(Qt::CTRL | Qt::Key_0), this, &MainWindow::fitView);
  viewMenu->addAction(tr("Zoom &In"), this, [this] { view_->zoomBy(1.25); })
      ->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Plus), QKeySequence(Qt::CTRL | Qt::Key_Equal)});
  viewMenu->addAction(tr("Zoom &Out"), QKeySequence(Qt::CTRL | Qt::Key_Minus), this, [this] { view_->zoomBy(0.8); });
  QAction* minimap = viewMenu->addAction(tr("&Minimap"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M), this,
                                         [this](bool shown) {
                                           view_->minimap()->setVisible(shown);
                                           QSettings().setValue(QStringLiteral("view/minimap"), shown);
                                         });
  minimap->setCheckable(true);
  minimap->setChecked(QSettings().value(QStringLiteral("view/minimap"), false).toBool());
  view_->minimap()->setVisible(minimap->isChecked());
  viewMenu->addSeparator();
  viewMenu->addMenu(docks);
}

void MainWindow::buildRunMenu() {
  QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
  runAction_ = runMenu->addAction(tr("&Run"), this, [this] { runWorkflow(); });
  runAction_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::Key_F5)});
  runSelectedAction_ = runMenu->addAction(tr("Run to &Selected"), this, [this] { runToSelected(); });
  runSelectedAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return));
  cancelAction_ = runMenu->addAction(tr("&Cancel"), this, &MainWindow::cancelRun);
  cancelAction_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Period), QKeySequence(Qt::SHIFT | Qt::Key_F5)});
  clearQueueAction_ = runMenu->addAction(tr("Clear &Queue"), run_, &RunController::clearQueue);
  runAction_->setToolTip(tr("Run every output (Ctrl+Return); during a run, queues another"));
  runSelectedAction_->setToolTip(tr("Run the selected nodes and what they need (Ctrl+Shift+Return)"));
  cancelAction_->setToolTip(tr("Cancel the current run (Ctrl+.); queued runs follow"));

  QToolBar* bar = addToolBar(tr("Run"));
  bar->setObjectName(QStringLiteral("runToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  bar->addAction(runAction_);
  bar->addAction(runSelectedAction_);
  bar->addAction(cancelAction_);
  bar->addSeparator();
  runStateLabel_ = new QLabel(bar);
  runStateLabel_->setObjectName(QStringLiteral("runStateLabel"));
  runStateLabel_->setContentsMargins(8, 0, 8, 0);
  bar->addWidget(runStateLabel_);
}

void MainWindow::connectSignals() {
  connect(controller_, &DocumentController::modifiedChanged, this, [this] { updateTitle(); });
  connect(controller_, &DocumentController::filePathChanged, this, [this] { updateTitle(); });
  // An edit of a failed node (or its undo) may remove the cause: its failed state goes.
  connect(controller_, &DocumentController::documentChanged, this, [this](const engine::DocumentChange& change) {
    if (change.kind == engine::ChangeKind::ParamChanged || change.kind == engine::ChangeKind::LinkAdded ||
        change.kind == engine::ChangeKind::LinkRemoved) {
      run_->clearFailure(change.node_id);
    }
  });
  connect(scene_, &GraphScene::message, this, [this](const QString& m) { statusBar()->showMessage(m, 6000); });
  connect(inspector_, &InspectorPanel::message, this, [this](const QString& m) { statusBar()->showMessage(m, 6000); });
  connect(player_, &PreviewPlayer::message, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(scene_, &QGraphicsScene::selectionChanged, this, [this] {
    const auto ids = scene_->selectedNodeIds();
    inspector_->setNode(ids.empty() ? std::string() : ids.front());
  });
  connect(view_, &GraphView::paletteRequested, this, [this](QPointF p) { openPalette(p, std::nullopt); });
  connect(view_, &GraphView::contextMenuRequested, this, &MainWindow::showContextMenu);
  connect(scene_, &GraphScene::wireDroppedOnCanvas, this, [this](const WireDrop& d) { openPalette(d.scenePos, d); });
  connect(palette_, &NodePalette::nodeChosen, this, &MainWindow::onNodeChosen);
  connect(run_, &RunController::logLine, log_, &LogPanel::appendLine);
  connect(run_, &RunController::runStarted, this, [this] { updateRunActions(); });
  connect(run_, &RunController::stepMetrics, this,
          [this](const QString& id, qint64 step, qint64 steps, const QVariantMap& metrics) {
            lossChart_->addStep(id, step, steps, metrics);
            if (!trainingDock_->isVisible()) trainingDock_->show();
          });
  connect(run_, &RunController::queueChanged, this, [this] { updateRunActions(); });
  connect(run_, &RunController::nodeStatusChanged, this, [this] { updateRunActions(); });
  connect(run_, &RunController::previewReceived, this, [this](const QString& id, const PreviewClip& clip) {
    player_->setClip(id, clip);
    previewDock_->show();
    previewDock_->raise();
  });
  connect(run_, &RunController::runFinished, this, [this](const QString& status, const QString& message) {
    updateRunActions();
    history_->refresh();  // the run's line is in by now (RunController appends it first)
    const QString text = message.isEmpty() ? tr("Run %1.").arg(status) : tr("Run %1: %2").arg(status, message);
    statusBar()->showMessage(text, 10000);
    // The clip a run made plays at once (a run that ends by itself, not a cancelled one).
    if (status == QLatin1String("succeeded") && player_->frameCount() > 1 && !player_->isPlaying()) player_->play();
    log_->appendLine(status == QLatin1String("succeeded") ? QStringLiteral("info") : QStringLiteral("error"),
                     QStringLiteral("run"), text);
  });
}

void MainWindow::openPalette(QPointF scenePos, const std::optional<WireDrop>& wire,
                             std::optional<std::pair<std::string, QString>> insertInto) {
  paletteScenePos_ = scenePos;
  paletteWire_ = wire;
  paletteInsert_ = std::move(insertInto);
  std::optional<PortFilter> filter;
  if (wire) filter = PortFilter{wire->type, wire->fromOutput};
  const QPoint global = view_->viewport()->mapToGlobal(view_->mapFromScene(scenePos));
  palette_->popup(global, filter);
}

void MainWindow::onNodeChosen(const QString& type, const QString& port) {
  if (paletteInsert_) {
    const auto [toNode, toInput] = *paletteInsert_;
    paletteInsert_.reset();
    paletteWire_.reset();
    auto id = controller_->insertNode(type.toStdString(), paletteScenePos_, toNode, toInput.toStdString(), port.toStdString());
    if (!id.ok()) {
      statusBar()->showMessage(QString::fromStdString(id.error().message), 8000);
      return;
    }
    scene_->selectNodes({id.value()});
    return;
  }
  std::optional<PendingLink> link;
  if (paletteWire_ && !port.isEmpty()) {
    link = PendingLink{paletteWire_->node, paletteWire_->port.toStdString(), paletteWire_->fromOutput, port.toStdString()};
  }
  auto id = controller_->addNode(type.toStdString(), paletteScenePos_, link);
  paletteWire_.reset();
  if (!id.ok()) {
    statusBar()->showMessage(QString::fromStdString(id.error().message), 8000);
    return;
  }
  scene_->selectNodes({id.value()});
}

void MainWindow::copySelection() {
  const auto ids = scene_->selectedNodeIds();
  if (ids.empty()) return;
  // A group travels with the copy when every node inside it is copied.
  const std::set<std::string> selected(ids.begin(), ids.end());
  std::vector<int> groups;
  for (const GroupItem* g : scene_->groupItems()) {
    const std::vector<std::string> members = scene_->nodesInGroup(g);
    if (!members.empty() && std::all_of(members.begin(), members.end(),
                                        [&](const std::string& id) { return selected.count(id) > 0; })) {
      groups.push_back(g->index());
    }
  }
  const QString json = controller_->copyJson(ids, groups);
  auto* mime = new QMimeData;
  mime->setText(json);
  mime->setData(QString::fromLatin1(kWorkflowMimeType), json.toUtf8());
  QGuiApplication::clipboard()->setMimeData(mime);
  statusBar()->showMessage(tr("Copied %n node(s).", nullptr, int(ids.size())), 4000);
}

void MainWindow::cutSelection() {
  copySelection();
  deleteSelection();
}

void MainWindow::pasteClipboard() {
  pasteClipboardAt(view_->cursorScenePos());
}

void MainWindow::pasteClipboardAt(QPointF scenePos) {
  const QMimeData* mime = QGuiApplication::clipboard()->mimeData();
  if (!mime) return;
  const QString json = mime->hasFormat(QString::fromLatin1(kWorkflowMimeType))
                           ? QString::fromUtf8(mime->data(QString::fromLatin1(kWorkflowMimeType)))
                           : mime->text();
  auto parsed = parseWorkflowJson(json);
  if (!parsed.ok()) {
    statusBar()->showMessage(tr("Nothing to paste: %1").arg(QString::fromStdString(parsed.error().message)), 6000);
    return;
  }
  // Place the pasted group's top-left corner at the mouse.
  QPointF topLeft(1e300, 1e300);
  for (auto it = parsed->layouts.begin(); it != parsed->layouts.end(); ++it) {
    const auto& pos = (*it)["pos"];
    if (pos.is_array() && pos.size() == 2 && pos[0].is_number() && pos[1].is_number()) {
      topLeft.setX(std::min(topLeft.x(), pos[0].get<double>()));
      topLeft.setY(std::min(topLeft.y(), pos[1].get<double>()));
    }
  }
  const QPointF offset = topLeft.x() > 1e299 ? QPointF(30, 30) : scenePos - topLeft;
  auto added = controller_->pasteJson(json, offset);
  if (!added.ok()) {
    statusBar()->showMessage(QString::fromStdString(added.error().message), 6000);
    return;
  }
  scene_->selectNodes(added.value());
}

void MainWindow::duplicateSelection() {
  const auto ids = scene_->selectedNodeIds();
  if (ids.empty()) return;
  auto added = controller_->duplicateNodes(ids, QPointF(40, 40));
  if (added.ok()) scene_->selectNodes(added.value());
  else statusBar()->showMessage(QString::fromStdString(added.error().message), 6000);
}

void MainWindow::deleteSelection() {
  auto status = controller_->removeNodes(scene_->selectedNodeIds());
  if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
}

bool MainWindow::runWorkflow(const QStringList& targets) {
  engine::RunOptions options = options_.runDefaults;
  if (!controller_->filePath().isEmpty()) {
    options.workflow_dir = QFileInfo(controller_->filePath()).absolutePath().toStdString();
  }
  options.output_dir = outputDir().toStdString();
  // Never replace an earlier output silently: a node's own `overwrite` param opts in, otherwise an
  // existing file fails that node with a message saying so.
  options.overwrite = false;
  auto workflow = controller_->workflow();  // with the edits of an open subgraph
  if (!workflow.ok()) {
    statusBar()->showMessage(QString::fromStdString(workflow.error().message), 6000);
    return false;
  }
  if (!confirmOutsideWrites(*workflow, options)) return false;
  QDir().mkpath(QString::fromStdString(options.output_dir));
  auto place = run_->enqueue(*workflow, targets, options);
  if (!place.ok()) {
    statusBar()->showMessage(QString::fromStdString(place.error().message), 6000);
    return false;
  }
  updateRunActions();
  if (place.value() > 0) {
    statusBar()->showMessage(tr("Queued: starts when the %n run(s) before it end.", nullptr, place.value()), 6000);
    return true;
  }
  statusBar()->showMessage(targets.isEmpty() ? tr("Running…") : tr("Running up to %1…").arg(targets.join(QStringLiteral(", "))));
  return true;
}

bool MainWindow::confirmOutsideWrites(const engine::GraphDocument& workflow, engine::RunOptions& options) {
  const QString& shared = controller_->sharedSource();
  options.confine_writes_to_output_dir = !shared.isEmpty();
  if (shared.isEmpty()) return true;
  const auto outside = engine::places_outside_output_dir(workflow, registry_, options);
  if (outside.empty()) return true;
  QString places;
  for (const engine::WritePlace& p : outside) {
    places += QStringLiteral("\n  %1.%2: %3").arg(QString::fromStdString(p.node_id), QString::fromStdString(p.param),
                                                 QString::fromStdString(p.path));
  }
  QMessageBox box(QMessageBox::Warning, tr("Write outside the output folder?"),
                  tr("This workflow came inside %1, a file someone may have shared. It writes outside the output "
                     "folder %2:%3\n\nLet it write there? Choose No to keep them, then set these params to places "
                     "inside the output folder ({output}/…).")
                      .arg(QFileInfo(shared).fileName(), QString::fromStdString(options.output_directory()),
                           places),
                  QMessageBox::Yes | QMessageBox::No, this);
  box.setDefaultButton(QMessageBox::No);
  if (box.exec() != QMessageBox::Yes) {
    statusBar()->showMessage(tr("Not run: the workflow writes outside the output folder."), 8000);
    return false;
  }
  options.confine_writes_to_output_dir = false;
  return true;
}

QString MainWindow::outputDir() const {
  if (!options_.runDefaults.output_dir.empty()) return QString::fromStdString(options_.runDefaults.output_dir);
  QString out = QStandardPaths::writableLocation(QStandardPaths::MoviesLocation);
  if (out.isEmpty()) out = QDir::homePath();
  return QDir(out).filePath(QStringLiteral("Vidgraph"));
}

bool MainWindow::runToSelected() {
  QStringList targets;
  const std::string path = controller_->levelPath();  // inside a subgraph, runs name nodes by path
  for (const auto& id : scene_->selectedNodeIds()) targets << QString::fromStdString(path.empty() ? id : path + "/" + id);
  if (targets.isEmpty()) {
    statusBar()->showMessage(tr("Select the nodes to run up to first."), 5000);
    return false;
  }
  return runWorkflow(targets);
}

void MainWindow::cancelRun() {
  if (!run_->isRunning()) return;
  run_->cancel();
  statusBar()->showMessage(run_->queuedCount() == 0
                               ? tr("Cancelling…")
                               : tr("Cancelling the current run; %n queued run(s) follow.", nullptr, run_->queuedCount()));
}

void MainWindow::fitView() {
  view_->fitToNodes();
}

void MainWindow::updateRunActions() {
  // Run stays enabled during a run: a second run is queued behind it.
  const bool running = run_->isRunning();
  const int queued = run_->queuedCount();
  cancelAction_->setEnabled(running);
  clearQueueAction_->setEnabled(queued > 0);
  QString state;
  if (!running) {
    state = tr("Idle");
  } else {
    state = tr("Running");
    for (const auto& [id, s] : run_->nodeStatuses()) {
      if (s.state != NodeRunState::Running) continue;
      state = s.max > 0 ? tr("Running %1 (%2/%3)").arg(QString::fromStdString(id)).arg(s.value).arg(s.max)
                        : tr("Running %1").arg(QString::fromStdString(id));
      break;
    }
  }
  if (queued > 0) state += tr(" · %n queued", nullptr, queued);
  runStateLabel_->setText(state);
}

}  // namespace vidgraph::gui
