// MainWindow: groups (see main_window.h): Group Selection (Ctrl+G), and the group menu (rename,
// delete keeping the nodes) shown by a right click inside a group.
#include <QtWidgets/QInputDialog>
#include <QtWidgets/QMenu>
#include <QtWidgets/QStatusBar>

#include "gui/document_controller.h"
#include "gui/graph_scene.h"
#include "gui/group_item.h"
#include "gui/main_window.h"

namespace vidgraph::gui {

namespace {

constexpr qreal kGroupMargin = 20;

}  // namespace

void MainWindow::groupSelection() {
  const auto ids = scene_->selectedNodeIds();
  if (ids.empty()) {
    statusBar()->showMessage(tr("Select the nodes to group first."), 6000);
    return;
  }
  QRectF around;
  for (const std::string& id : ids) around |= scene_->nodeItem(id)->sceneBoundingRect();
  around.adjust(-kGroupMargin, -kGroupMargin - GroupItem::kTitleHeight, kGroupMargin, kGroupMargin);
  auto status = controller_->addGroup(tr("Group"), around);
  if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
}

void MainWindow::renameGroup(int index, const QString& current) {
  bool ok = false;
  const QString title = QInputDialog::getText(this, tr("Rename Group"), tr("Title:"), QLineEdit::Normal, current, &ok);
  if (!ok || title == current) return;
  auto status = controller_->renameGroup(index, title);
  if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
}

QMenu* MainWindow::groupMenu(GroupItem* group, QPointF scenePos) {
  QMenu* menu = canvasMenu(scenePos);
  QAction* first = menu->actions().value(0);
  const int index = group->index();
  const QString title = group->title();
  auto* rename = new QAction(tr("&Rename Group…"), menu);
  connect(rename, &QAction::triggered, this, [this, index, title] { renameGroup(index, title); });
  auto* remove = new QAction(tr("Delete &Group (Keep Nodes)"), menu);
  connect(remove, &QAction::triggered, this, [this, index] {
    auto status = controller_->removeGroup(index);
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  });
  menu->insertAction(first, rename);
  menu->insertAction(first, remove);
  menu->insertSeparator(first);
  return menu;
}

}  // namespace vidgraph::gui
