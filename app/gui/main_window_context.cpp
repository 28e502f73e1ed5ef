// MainWindow: the canvas's right-click menus (see main_window.h): on a node, on a wire, on the canvas.
#include <algorithm>

#include <QtGui/QClipboard>
#include <QtGui/QGuiApplication>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QMimeData>
#include <QtCore/QUrl>
#include <QtGui/QDesktopServices>
#include <QtWidgets/QInputDialog>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QMenu>
#include <QtWidgets/QStatusBar>

#include "gui/clipboard_json.h"
#include "engine/node_type.h"
#include "engine/subgraph.h"
#include "gui/connection_item.h"
#include "gui/document_controller.h"
#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/group_item.h"
#include "gui/main_window.h"
#include "gui/node_palette.h"

namespace vidgraph::gui {

namespace {

// The node or wire item at a view position (a node's child items count as the node).
QGraphicsItem* topItemAt(GraphView* view, QPoint viewPos) {
  for (QGraphicsItem* item : view->items(QRect(viewPos - QPoint(3, 3), QSize(7, 7)))) {
    if (item->type() == RerouteItem::Type) return item;
    for (QGraphicsItem* i = item; i; i = i->parentItem()) {
      if (i->type() == NodeItem::Type || i->type() == ConnectionItem::Type) return i;
    }
  }
  return nullptr;
}

}  // namespace

QMenu* MainWindow::contextMenuAt(QPoint viewPos) {
  const QPointF scenePos = view_->mapToScene(viewPos);
  QGraphicsItem* item = topItemAt(view_, viewPos);
  QMenu* menu = nullptr;
  if (item && item->type() == NodeItem::Type) {
    auto* node = static_cast<NodeItem*>(item);
    if (!node->isSelected()) scene_->selectNodes({node->nodeId()});
    menu = nodeMenu();
  } else if (item && item->type() == ConnectionItem::Type) {
    menu = wireMenu(static_cast<ConnectionItem*>(item), scenePos);
  } else if (item && item->type() == RerouteItem::Type) {
    menu = rerouteMenu(static_cast<RerouteItem*>(item));
  } else if (GroupItem* group = scene_->groupAt(scenePos)) {
    menu = groupMenu(group, scenePos);
  } else {
    menu = canvasMenu(scenePos);
  }
  menu->setObjectName(QStringLiteral("canvasContextMenu"));
  menu->setAttribute(Qt::WA_DeleteOnClose);
  return menu;
}

void MainWindow::showContextMenu(QPoint viewPos) {
  contextMenuAt(viewPos)->popup(view_->viewport()->mapToGlobal(viewPos));
}

QMenu* MainWindow::nodeMenu() {
  auto* menu = new QMenu(this);
  const auto ids = scene_->selectedNodeIds();
  menu->addAction(tr("Run to &Here"), this, [this] { runToSelected(); });
  menu->addSeparator();
  menu->addAction(tr("&Duplicate"), this, &MainWindow::duplicateSelection);
  menu->addAction(tr("Dis&connect All"), this, [this] {
    auto status = controller_->disconnectNodes(scene_->selectedNodeIds());
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  });
  if (ids.size() == 1) {
    const QString folder = fileFolderOf(ids.front());
    if (!folder.isEmpty()) {
      menu->addAction(tr("Show in &Folder"), this, [folder] { QDesktopServices::openUrl(QUrl::fromLocalFile(folder)); })
          ->setToolTip(folder);
    }
  }
  const bool allBypassed = std::all_of(ids.begin(), ids.end(), [this](const std::string& id) {
    const engine::Node* n = controller_->document().find_node(id);
    return n && n->bypass;
  });
  QAction* bypass = menu->addAction(tr("&Bypass"), this, &MainWindow::toggleBypassSelection);
  bypass->setCheckable(true);
  bypass->setChecked(!ids.empty() && allBypassed);
  const bool allCollapsed = std::all_of(ids.begin(), ids.end(), [this](const std::string& id) {
    return controller_->isCollapsed(id);
  });
  QAction* collapse = menu->addAction(tr("C&ollapse"), this, &MainWindow::toggleCollapseSelection);
  collapse->setCheckable(true);
  collapse->setChecked(!ids.empty() && allCollapsed);
  menu->addAction(tr("&Group Selection"), this, &MainWindow::groupSelection);
  menu->addAction(tr("Make &Subgraph…"), this, [this] {
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Make Subgraph"), tr("Name of the subgraph:"),
                                               QLineEdit::Normal, tr("Subgraph"), &ok);
    if (!ok) return;
    auto made = controller_->makeSubgraph(scene_->selectedNodeIds(), name.trimmed().toStdString());
    if (!made.ok()) statusBar()->showMessage(QString::fromStdString(made.error().message), 6000);
  });
  addSubgraphActions(menu, ids);
  menu->addSeparator();
  menu->addAction(tr("De&lete"), this, &MainWindow::deleteSelection);
  return menu;
}

QString MainWindow::fileFolderOf(const std::string& id) const {
  const engine::Node* node = controller_->document().find_node(id);
  const engine::NodeType* type = node ? registry_.find(node->type) : nullptr;
  if (!type) return {};
  const nlohmann::json params = type->params_with_defaults(node->params);
  for (const engine::ParamSpec& spec : type->params) {
    if (spec.kind != engine::ParamKind::FilePath) continue;
    auto it = params.find(spec.name);
    if (it == params.end() || !it->is_string() || it->get<std::string>().empty()) continue;
    QString path = QString::fromStdString(it->get<std::string>());
    path.replace(QStringLiteral("{output}"), outputDir());
    if (QFileInfo(path).isRelative()) {
      const QString base = controller_->filePath().isEmpty() ? QDir::currentPath()
                                                              : QFileInfo(controller_->filePath()).absolutePath();
      path = QDir(base).filePath(path);
    }
    return QFileInfo(path).absolutePath();
  }
  return {};
}

QMenu* MainWindow::wireMenu(ConnectionItem* wire, QPointF scenePos) {
  auto* menu = new QMenu(this);
  const std::string toNode = wire->toNode();
  const QString toInput = wire->toInput();
  const QString type = wire->valueType();
  menu->addAction(tr("&Insert Node…"), this, [this, toNode, toInput, type, scenePos] {
    openPalette(scenePos, WireDrop{{}, {}, type, true, scenePos}, std::make_pair(toNode, toInput));
  });
  menu->addAction(tr("Add &Reroute Point"), this, [this, toNode, toInput, scenePos] {
    ConnectionItem* now = scene_->connectionItem(toNode, toInput);  // looked up again: the menu was open a while
    if (!now) return;
    const QPainterPath& path = now->path();
    auto status = controller_->addReroutePoint(toNode, toInput.toStdString(), scenePos, path.pointAtPercent(0),
                                               path.pointAtPercent(1));
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  });
  menu->addAction(tr("&Delete Link"), this, [this, toNode, toInput] {
    auto status = controller_->disconnectInput(toNode, toInput.toStdString());
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  });
  return menu;
}

QMenu* MainWindow::rerouteMenu(RerouteItem* dot) {
  auto* menu = new QMenu(this);
  const std::string node = dot->wire()->toNode(), input = dot->wire()->toInput().toStdString();
  const int index = dot->index();
  menu->addAction(tr("Delete &Reroute Point"), this, [this, node, input, index] {
    QVector<QPointF> points = controller_->reroutePoints(node, input);
    if (index >= points.size()) return;
    points.remove(index);
    auto status = controller_->setReroutePoints(node, input, points);
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  });
  return menu;
}

QMenu* MainWindow::canvasMenu(QPointF scenePos) {
  auto* menu = new QMenu(this);
  menu->addAction(tr("&Add Node…"), this, [this, scenePos] { openPalette(scenePos, std::nullopt); });
  const QMimeData* mime = QGuiApplication::clipboard()->mimeData();
  QAction* paste = menu->addAction(tr("&Paste"), this, [this, scenePos] { pasteClipboardAt(scenePos); });
  paste->setEnabled(mime && (mime->hasFormat(QString::fromLatin1(kWorkflowMimeType)) || mime->hasText()));
  menu->addSeparator();
  menu->addAction(tr("&Fit to Nodes"), this, &MainWindow::fitView);
  return menu;
}

}  // namespace vidgraph::gui
