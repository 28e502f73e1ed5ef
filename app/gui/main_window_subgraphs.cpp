// MainWindow: the breadcrumb of open subgraphs and the node menu's subgraph actions (see
// main_window.h; the levels themselves are DocumentController's).
#include <QtWidgets/QInputDialog>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenu>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QToolBar>

#include "engine/subgraph.h"
#include "gui/main_window.h"

namespace vidgraph::gui {

void MainWindow::buildBreadcrumbBar() {
  addToolBarBreak();
  breadcrumbBar_ = addToolBar(tr("Subgraph"));
  breadcrumbBar_->setObjectName(QStringLiteral("breadcrumbBar"));
  breadcrumbBar_->setMovable(false);
  breadcrumbBar_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  connect(controller_, &DocumentController::levelChanged, this, &MainWindow::rebuildBreadcrumb);
  connect(controller_, &DocumentController::filePathChanged, this, &MainWindow::rebuildBreadcrumb);
  rebuildBreadcrumb();
}

void MainWindow::rebuildBreadcrumb() {
  breadcrumbBar_->clear();
  const QStringList crumbs = controller_->breadcrumb();
  for (int depth = 0; depth < crumbs.size(); ++depth) {
    if (depth > 0) breadcrumbBar_->addWidget(new QLabel(QStringLiteral("›"), breadcrumbBar_));
    QAction* crumb = breadcrumbBar_->addAction(crumbs[depth], this, [this, depth] {
      if (auto status = controller_->leaveSubgraph(depth); !status.ok()) {
        statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
      }
    });
    crumb->setEnabled(depth + 1 < crumbs.size());  // the level shown is no link
    crumb->setToolTip(depth == 0 ? tr("Back to the workflow") : tr("Back to this subgraph"));
  }
  breadcrumbBar_->setVisible(controller_->depth() > 0);
}

void MainWindow::addSubgraphActions(QMenu* menu, const std::vector<std::string>& ids) {
  if (ids.size() != 1) return;
  const std::string id = ids.front();
  const engine::Node* node = controller_->document().find_node(id);
  if (!node) return;
  auto report = [this](const engine::Status& status) {
    if (!status.ok()) statusBar()->showMessage(QString::fromStdString(status.error().message), 6000);
  };
  if (node->type == engine::kSubgraphType) {
    menu->addAction(tr("&Open Subgraph"), this, [this, id, report] { report(controller_->enterSubgraph(id)); });
    menu->addAction(tr("&Unpack Subgraph"), this, [this, id, report] { report(controller_->unpackSubgraph(id)); });
  }
  if (controller_->depth() == 0) return;
  const auto type = controller_->displayType(*node);
  if (type && !type->params.empty()) {
    menu->addAction(tr("E&xpose Param…"), this, [this, id, params = type->params, report] {
      QStringList names;
      for (const engine::ParamSpec& p : params) names << QString::fromStdString(p.name);
      bool ok = false;
      const QString param = QInputDialog::getItem(this, tr("Expose Param"), tr("Param of '%1' that the subgraph's "
                                                  "instances set:").arg(QString::fromStdString(id)), names, 0, false, &ok);
      if (!ok) return;
      const QString name = QInputDialog::getText(this, tr("Expose Param"), tr("Name on the instances:"),
                                                 QLineEdit::Normal, param, &ok);
      if (ok) report(controller_->exposeParam(id, param.toStdString(), name.trimmed().toStdString()));
    });
  }
  QStringList exposed;
  for (const auto& [name, inner] : controller_->exposedParams()) {
    if (inner.node == id) exposed << QString::fromStdString(name);
  }
  if (!exposed.isEmpty()) {
    menu->addAction(tr("U&nexpose Param…"), this, [this, exposed, report] {
      bool ok = false;
      const QString name = QInputDialog::getItem(this, tr("Unexpose Param"), tr("Param the instances no longer set:"),
                                                 exposed, 0, false, &ok);
      if (ok) report(controller_->unexposeParam(name.toStdString()));
    });
  }
}

}  // namespace vidgraph::gui
