// MainWindow: files (new, open, save, save as, recent, drag-and-drop), the unsaved-changes prompt,
// crash recovery and window state (see main_window.h).
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QMimeData>
#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtGui/QCloseEvent>
#include <QtGui/QDragEnterEvent>
#include <QtGui/QDropEvent>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QMenuBar>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QStatusBar>

#include "gui/autosave.h"
#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/log_panel.h"
#include "gui/main_window.h"
#include "gui/preview_player.h"
#include "gui/run_controller.h"
#if defined(VIDGRAPH_GUI_HAVE_NODES) && defined(VIDGRAPH_HAVE_MEDIA)
#define VIDGRAPH_GUI_READS_OUTPUTS 1
#include "nodes/media/embedded_workflow.h"
#endif

namespace vidgraph::gui {

namespace {

constexpr int kMaxRecent = 10;
const char* const kWorkflowFilter = "Vidgraph workflows (*.vgflow);;JSON (*.json);;All files (*)";

QString settingsKeyRecent() { return QStringLiteral("recentFiles"); }

// A workflow file, or an output Vidgraph wrote (its workflow is embedded).
bool isWorkflowUrl(const QUrl& url) {
  if (!url.isLocalFile()) return false;
  const QString path = url.toLocalFile();
#ifdef VIDGRAPH_GUI_READS_OUTPUTS
  if (nodes::media::may_embed_workflow(path.toStdString())) return true;
#endif
  return path.endsWith(QLatin1String(".vgflow"), Qt::CaseInsensitive);
}

// The image files Load Image reads.
bool isImageUrl(const QUrl& url) {
  if (!url.isLocalFile()) return false;
  const QString suffix = QFileInfo(url.toLocalFile()).suffix().toLower();
  return suffix == QLatin1String("png") || suffix == QLatin1String("jpg") || suffix == QLatin1String("jpeg") ||
         suffix == QLatin1String("webp");
}

}  // namespace

void MainWindow::buildFileMenu() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  // Explicit sequences: some platforms map a standard key to nothing (QKeySequence::SaveAs is empty
  // on several Linux themes), so each documented shortcut is spelled out.
  file->addAction(tr("&New"), QKeySequence(Qt::CTRL | Qt::Key_N), this, &MainWindow::newDocument);
  file->addAction(tr("&Open…"), QKeySequence(Qt::CTRL | Qt::Key_O), this, &MainWindow::openWithDialog);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();
  examplesMenu_ = file->addMenu(tr("Open &Example"));
  examplesMenu_->setObjectName(QStringLiteral("examplesMenu"));
  rebuildExamplesMenu();
  connect(examplesMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildExamplesMenu);
  file->addSeparator();
  file->addAction(tr("&Save"), QKeySequence(Qt::CTRL | Qt::Key_S), this, [this] { save(); });
  file->addAction(tr("Save &As…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), this, [this] { saveAs(); });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), this, &QWidget::close);
}

void MainWindow::newDocument() {
  if (!maybeSave()) return;
  controller_->newDocument();
  run_->clearStatuses();
  player_->setClip({}, {});  // the previous document's preview does not belong to the new one
}

engine::Status MainWindow::openWorkflowOrOutput(const QString& path, QString* embeddedIn) {
#ifdef VIDGRAPH_GUI_READS_OUTPUTS
  if (nodes::media::may_embed_workflow(path.toStdString())) {
    std::string json, error;
    if (!nodes::media::read_embedded_workflow(path.toStdString(), &json, &error)) {
      auto asWorkflow = controller_->open(path);  // a workflow under an odd name?
      if (asWorkflow.ok()) return asWorkflow;
      return engine::make_error(asWorkflow.error().message + ". Nor does it hold a workflow to read back: " + error);
    }
    *embeddedIn = path;
    return controller_->openEmbedded(QString::fromStdString(json), path + tr(" (its embedded workflow)"));
  }
#endif
  (void)embeddedIn;
  return controller_->open(path);
}

bool MainWindow::openHistoryRun(const QString& workflow, const QString& label, bool run) {
  if (!maybeSave()) return false;
  const bool opened = showOpenedUntitled(controller_->openEmbedded(workflow, label), tr("Cannot open the run"),
                                         tr("Opened the workflow of %1 (untitled: Save asks where).").arg(label));
  return opened && (!run || runWorkflow());
}

bool MainWindow::showOpenedUntitled(const engine::Status& status, const QString& errorTitle, const QString& message) {
  if (!status.ok()) {
    showError(errorTitle, QString::fromStdString(status.error().to_string()));
    return false;
  }
  run_->clearStatuses();
  player_->setClip({}, {});  // the previous document's preview does not belong to this one
  fitView();
  statusBar()->showMessage(message, 8000);
  return true;
}

bool MainWindow::openFile(const QString& path) {
  QString embeddedIn;
  auto status = openWorkflowOrOutput(path, &embeddedIn);
  if (!status.ok()) {
    showError(tr("Cannot open the workflow"), QString::fromStdString(status.error().to_string()));
    return false;
  }
  run_->clearStatuses();
  player_->setClip({}, {});  // the previous document's preview does not belong to this one
  if (!embeddedIn.isEmpty()) controller_->setSharedSource(embeddedIn);  // untrusted while it is open
  const QString& comfy = controller_->importedFrom();
  if (embeddedIn.isEmpty()) addRecentFile(comfy.isEmpty() ? controller_->filePath() : QFileInfo(path).absoluteFilePath());
  const QStringList& warnings = controller_->loadWarnings();
  for (const QString& w : warnings) log_->appendLine(QStringLiteral("warning"), QStringLiteral("open"), w);
  fitView();
  if (!comfy.isEmpty()) {  // its report is in the log; it is untitled and unsaved, so it is never written over
    statusBar()->showMessage(tr("Imported the ComfyUI workflow %1 (untitled: Save asks where); %2 in the log.")
                                 .arg(QFileInfo(comfy).fileName(),
                                      warnings.isEmpty() ? tr("nothing was approximated")
                                                         : tr("%n remark(s) on the import", nullptr, warnings.size())),
                             15000);
    return true;
  }
  if (warnings.isEmpty()) {
    statusBar()->showMessage(embeddedIn.isEmpty() ? tr("Opened %1").arg(controller_->displayName())
                                                  : tr("Opened the workflow that made %1 (untitled: Save asks where)")
                                                        .arg(QFileInfo(embeddedIn).fileName()),
                             8000);
    return true;
  }
  const QString count = warnings.size() == 1 ? tr("1 problem") : tr("%1 problems").arg(warnings.size());
  const QString summary =
      tr("Opened %1 with %2; the nodes concerned are marked, details in the log.").arg(controller_->displayName(), count);
  statusBar()->showMessage(summary, 15000);
  if (qEnvironmentVariable("QT_QPA_PLATFORM") != QLatin1String("offscreen")) {  // tests: no modal boxes
    QMessageBox box(QMessageBox::Warning, tr("Problems in the workflow"), summary, QMessageBox::Ok, this);
    box.setInformativeText(QStringLiteral("• ") + warnings.join(QStringLiteral("\n• ")));
    box.exec();
  }
  return true;
}

bool MainWindow::saveTo(const QString& path) {
  auto status = controller_->save(path);
  if (!status.ok()) {
    showError(tr("Cannot save the workflow"), QString::fromStdString(status.error().to_string()));
    return false;
  }
  addRecentFile(controller_->filePath());
  statusBar()->showMessage(tr("Saved %1").arg(controller_->filePath()), 5000);
  return true;
}

bool MainWindow::save() {
  return controller_->filePath().isEmpty() ? saveAs() : saveTo(controller_->filePath());
}

// Where Save As starts: the document's own file; for an untitled one, the folder of the latest
// recent file that still exists, else the Documents folder (never the process's working folder).
QString MainWindow::saveDialogPath() const {
  if (!controller_->filePath().isEmpty()) return controller_->filePath();
  if (const QString recent = recentFolder(); !recent.isEmpty()) return recent;
  const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  return QFileInfo(documents).isDir() ? documents : QDir::homePath();
}

bool MainWindow::saveAs() {
  QString path = QFileDialog::getSaveFileName(this, tr("Save workflow"), saveDialogPath(), tr(kWorkflowFilter));
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".vgflow");
  return saveTo(path);
}

bool MainWindow::maybeSave() {
  if (!controller_->isModified()) return true;
  const auto answer = QMessageBox::warning(
      this, tr("Unsaved changes"), tr("%1 has unsaved changes. Save them?").arg(controller_->displayName()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) return save();
  autosave_->discard();
  return true;
}

bool MainWindow::offerRecovery() {
  const QList<RecoveryEntry> entries =
      Autosave::findRecoveries(options_.recoveryDir.isEmpty() ? Autosave::defaultRecoveryDir() : options_.recoveryDir);
  for (const RecoveryEntry& e : entries) {
    const QString name = e.originalPath.isEmpty() ? tr("an untitled workflow") : e.originalPath;
    const QString when = e.savedAt.toLocalTime().toString();
    const QString text =
        e.declined ? tr("Unsaved changes to %1, autosaved at %2, were kept when you chose not to restore them.\n\n"
                        "Restore them now?").arg(name, when)
                   : tr("Vidgraph did not close normally. Unsaved changes to %1 were autosaved at %2.\n\n"
                        "Restore them?").arg(name, when);
    const auto answer = QMessageBox::question(this, tr("Restore unsaved work?"), text,
                                              QMessageBox::Yes | QMessageBox::No | QMessageBox::Discard,
                                              QMessageBox::Yes);
    if (answer == QMessageBox::Discard) {
      Autosave::removeRecovery(e.recoveryPath);
      continue;
    }
    if (answer != QMessageBox::Yes) {
      Autosave::markDeclined(e.recoveryPath);
      continue;
    }
    QString error;
    if (!Autosave::restore(controller_, e, &error)) {
      showError(tr("Cannot restore"), error);
      continue;
    }
    fitView();
    return true;
  }
  return false;
}

void MainWindow::startUp(const QStringList& files) {
  const bool restored = offerRecovery();
  if (files.isEmpty()) return;
  if (!restored) {
    openFile(files.front());
    return;
  }
  const QString path = QFileInfo(files.front()).absoluteFilePath();
  if (path == QFileInfo(controller_->filePath()).absoluteFilePath()) return;  // the restored work is that file's
  log_->appendLine(QStringLiteral("warning"), QStringLiteral("open"),
                   tr("Kept the restored work; %1 was not opened (open it from File ▸ Open).").arg(files.front()));
}

QStringList MainWindow::recentFiles() const {
  return QSettings().value(settingsKeyRecent()).toStringList();
}

void MainWindow::addRecentFile(const QString& path) {
  QStringList files = recentFiles();
  files.removeAll(path);
  files.prepend(path);
  while (files.size() > kMaxRecent) files.removeLast();
  QSettings().setValue(settingsKeyRecent(), files);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList files = recentFiles();
  for (const QString& f : files) {
    recentMenu_->addAction(QFileInfo(f).fileName() + QStringLiteral("  (") + f + QLatin1Char(')'), this, [this, f] {
      if (maybeSave()) openFile(f);
    });
  }
  recentMenu_->setEnabled(!files.isEmpty());
  if (!files.isEmpty()) {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear"), this, [this] {
      QSettings().remove(settingsKeyRecent());
      rebuildRecentMenu();
    });
  }
}

void MainWindow::updateTitle() {
  setWindowTitle(controller_->displayName() + QStringLiteral("[*] — Vidgraph"));
  setWindowModified(controller_->isModified());
}

void MainWindow::showError(const QString& title, const QString& text) {
  log_->appendLine(QStringLiteral("error"), QStringLiteral("gui"), text);
  if (qEnvironmentVariable("QT_QPA_PLATFORM") == QLatin1String("offscreen")) return;  // tests: no modal boxes
  QMessageBox::critical(this, title, text);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  if (run_->isRunning()) run_->cancel();
  autosave_->discard();
  saveSettings();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const auto urls = event->mimeData()->urls();
  const bool images = registry_.find("LoadImage") && std::any_of(urls.begin(), urls.end(), isImageUrl);
  if (images || std::any_of(urls.begin(), urls.end(), isWorkflowUrl)) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  for (const QUrl& url : urls) {
    if (!isWorkflowUrl(url)) continue;
    event->acceptProposedAction();
    if (maybeSave()) openFile(url.toLocalFile());
    return;
  }
  // Images: a Load Image node each, where they were dropped (one undo step each).
  QPointF at = view_->mapToScene(view_->viewport()->mapFrom(this, event->position().toPoint()));
  for (const QUrl& url : urls) {
    if (!isImageUrl(url) || !registry_.find("LoadImage")) continue;
    event->acceptProposedAction();
    auto id = controller_->addNode("LoadImage", at, std::nullopt, {{"path", url.toLocalFile().toStdString()}});
    if (!id.ok()) {
      statusBar()->showMessage(QString::fromStdString(id.error().message), 8000);
      return;
    }
    scene_->selectNodes({id.value()});
    at += QPointF(30, 30);
  }
}

void MainWindow::restoreSettings() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

void MainWindow::saveSettings() {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
}

}  // namespace vidgraph::gui
