// MainWindow: File ▸ Open Example (the shipped workflows) and the Open dialog's first folder (see
// main_window.h).
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QMenu>
#include <QtWidgets/QStatusBar>

#include "engine/run_options.h"
#include "gui/main_window.h"
#include "gui/run_controller.h"
#include "gui/preview_player.h"

namespace vidgraph::gui {

namespace {

const char* const kOpenFilter =
    "Vidgraph workflows (*.vgflow);;Vidgraph outputs, their workflow (*.mp4 *.webm metadata.json);;JSON (*.json);;"
    "All files (*)";

// "wan22-ti2v-5b-i2v.vgflow" → "wan22 ti2v 5b i2v": the menu shows the file's base name.
QString exampleTitle(const QFileInfo& file) {
  QString title = file.completeBaseName();
  title.replace(QLatin1Char('-'), QLatin1Char(' '));
  return title;
}

}  // namespace

QString MainWindow::examplesDir() const {
  if (!options_.examplesDir.isEmpty()) return options_.examplesDir;
  const std::string resources = options_.runDefaults.resources_dir.empty() ? engine::default_resources_dir()
                                                                           : options_.runDefaults.resources_dir;
  return resources.empty() ? QString() : QString::fromStdString(resources) + QStringLiteral("/workflows");
}

void MainWindow::rebuildExamplesMenu() {
  examplesMenu_->clear();
  const QFileInfoList files = QDir(examplesDir()).entryInfoList({QStringLiteral("*.vgflow")}, QDir::Files, QDir::Name);
  for (const QFileInfo& f : files) {
    const QString path = f.absoluteFilePath();
    examplesMenu_->addAction(exampleTitle(f), this, [this, path] {
      if (maybeSave()) openExample(path);
    })->setToolTip(path);
  }
  if (files.isEmpty()) examplesMenu_->addAction(tr("(no examples in %1)").arg(examplesDir()))->setEnabled(false);
}

bool MainWindow::openExample(const QString& path) {
  return showOpenedUntitled(controller_->openAsUntitled(path), tr("Cannot open the example"),
                            tr("Opened the example %1 as an untitled workflow; Save asks where to keep it.")
                                .arg(QFileInfo(path).fileName()));
}

QString MainWindow::recentFolder() const {
  for (const QString& f : recentFiles()) {
    const QString dir = QFileInfo(f).absolutePath();
    if (QFileInfo(dir).isDir()) return dir;
  }
  return {};
}

QString MainWindow::openDialogDir() const {
  const QString recent = recentFolder();
  return recent.isEmpty() ? examplesDir() : recent;
}

void MainWindow::openWithDialog() {
  if (!maybeSave()) return;
  const QString path = QFileDialog::getOpenFileName(this, tr("Open workflow"), openDialogDir(), tr(kOpenFilter));
  if (!path.isEmpty()) openFile(path);
}

}  // namespace vidgraph::gui
