// InspectorPanel (see inspector_panel.h).
#include "gui/inspector_panel.h"

#include <QtWidgets/QFormLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QScrollArea>
#include <QtWidgets/QVBoxLayout>

#include "engine/registry.h"
#include "gui/document_controller.h"
#include "gui/inspector_editors.h"

#ifdef VIDGRAPH_GUI_HAVE_NODES
#include <QtCore/QFileInfo>

#include "nodes/model_choices.h"
#endif  // VIDGRAPH_GUI_HAVE_NODES

namespace vidgraph::gui {

namespace {

// The model files found for a file param of `node` (nodes/model_choices.h), paths as the run
// resolves them (relative to the workflow's folder, the runs' default yaml file from `runDefaults`).
QList<FileChoiceGroup> modelChoices(const DocumentController& controller, const engine::RunOptions& runDefaults,
                                    const engine::Node& node, const engine::ParamSpec& spec) {
  QList<FileChoiceGroup> out;
#ifdef VIDGRAPH_GUI_HAVE_NODES
  if (spec.kind != engine::ParamKind::FilePath || !nodes::is_model_file_param(node.type, spec.name)) return out;
  engine::RunOptions options = runDefaults;
  if (!controller.filePath().isEmpty()) {
    options.workflow_dir = QFileInfo(controller.filePath()).absolutePath().toStdString();
  }
  for (const nodes::ModelFileChoice& file : nodes::model_file_choices(node.type, spec.name, node.params, options)) {
    const QString group = QString::fromStdString(file.group);
    if (out.isEmpty() || out.back().title != group) out.append({group, {}});
    out.back().paths << QString::fromStdString(file.path);
  }
#else
  (void)controller;
  (void)runDefaults;
  (void)node;
  (void)spec;
#endif  // VIDGRAPH_GUI_HAVE_NODES
  return out;
}

// Params that change where model files are looked for: their editors' choices follow them.
bool choosesModelFolders(const std::string& param) { return param == "model_path" || param == "model_paths_file"; }

}  // namespace

InspectorPanel::InspectorPanel(DocumentController* controller, engine::RunOptions runDefaults, QWidget* parent)
    : QWidget(parent), controller_(controller), runDefaults_(std::move(runDefaults)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  body_ = new QWidget(scroll);
  scroll->setWidget(body_);
  layout->addWidget(scroll);
  new QFormLayout(body_);
  connect(controller_, &DocumentController::documentChanged, this, &InspectorPanel::onDocumentChanged);
  rebuild();
}

ParamEditor* InspectorPanel::editor(const std::string& param) const {
  auto it = editors_.find(param);
  return it == editors_.end() ? nullptr : it->second;
}

void InspectorPanel::setNode(const std::string& nodeId) {
  if (nodeId == nodeId_) return;
  nodeId_ = nodeId;
  rebuild();
}

void InspectorPanel::rebuild() {
  auto* form = static_cast<QFormLayout*>(body_->layout());
  while (form->rowCount() > 0) form->removeRow(0);
  editors_.clear();
  idEdit_ = nullptr;
  const engine::Node* node = controller_->document().find_node(nodeId_);
  if (!node) {
    nodeId_.clear();
    auto* hint = new QLabel(tr("Select a node to edit its parameters."), body_);
    hint->setWordWrap(true);
    form->addRow(hint);
    return;
  }
  const std::optional<engine::NodeType> type = controller_->displayType(*node);
  idEdit_ = new QLineEdit(QString::fromStdString(node->id), body_);
  connect(idEdit_, &QLineEdit::editingFinished, this, [this] {
    const std::string wanted = idEdit_->text().trimmed().toStdString();
    if (wanted == nodeId_) return;
    auto status = controller_->renameNode(nodeId_, wanted);
    if (!status.ok()) {
      idEdit_->setText(QString::fromStdString(nodeId_));
      Q_EMIT message(QString::fromStdString(status.error().message));
    }
  });
  form->addRow(tr("Id"), idEdit_);
  auto* typeLabel = new QLabel(QString::fromStdString(node->type) +
                                   (type ? QString() : tr(" (unknown type: kept and saved unchanged)")), body_);
  form->addRow(tr("Type"), typeLabel);
  if (!type) return;
  if (!type->description.empty()) {
    auto* d = new QLabel(QString::fromStdString(type->description), body_);
    d->setWordWrap(true);
    d->setStyleSheet(QStringLiteral("color: #9a9aa2;"));
    form->addRow(d);
  }
  for (const engine::ParamSpec& spec : type->params) {
    const QList<FileChoiceGroup> choices = modelChoices(*controller_, runDefaults_, *node, spec);
    // Listed again when the drop-down opens: the node's params then, the folders' files then.
    auto relist = [this, spec] {
      const engine::Node* now = controller_->document().find_node(nodeId_);
      return now ? modelChoices(*controller_, runDefaults_, *now, spec) : QList<FileChoiceGroup>();
    };
    ParamEditor* e = choices.isEmpty() ? createParamEditor(spec, body_) : createModelFileEditor(spec, relist, body_);
    const std::string param = spec.name;
    e->setToolTip(QString::fromStdString(spec.description));
    e->showValue(node->params.contains(param) ? node->params[param] : nlohmann::json());
    e->setCommit([this, param](nlohmann::json value) {
      auto status = controller_->setParam(nodeId_, param, std::move(value));
      if (!status.ok()) Q_EMIT message(QString::fromStdString(status.error().message));
    });
    const std::string label = spec.display_name.empty() ? spec.name : spec.display_name;
    form->addRow(QString::fromStdString(label) + (spec.advanced ? QStringLiteral(" ⚙") : QString()), e);
    editors_[param] = e;
  }
}

void InspectorPanel::onDocumentChanged(const engine::DocumentChange& change) {
  switch (change.kind) {
    case engine::ChangeKind::ParamChanged:
      if (change.node_id == nodeId_ && choosesModelFolders(change.port)) {
        // New folders: new drop-downs. Queued, as the editor that committed is still on the stack.
        QMetaObject::invokeMethod(this, [this] { rebuild(); }, Qt::QueuedConnection);
      } else if (change.node_id == nodeId_) {
        if (ParamEditor* e = editor(change.port)) {
          const engine::Node* node = controller_->document().find_node(nodeId_);
          e->showValue(node && node->params.contains(change.port) ? node->params[change.port] : nlohmann::json());
        }
      }
      break;
    case engine::ChangeKind::NodeRenamed:
      if (change.old_node_id == nodeId_) {
        nodeId_ = change.node_id;
        if (idEdit_) idEdit_->setText(QString::fromStdString(nodeId_));
      }
      break;
    case engine::ChangeKind::NodeRemoved:
      if (change.node_id == nodeId_) setNode({});
      break;
    case engine::ChangeKind::NodeUpdated:
    case engine::ChangeKind::Reset:
      rebuild();
      break;
    default:
      break;
  }
}

}  // namespace vidgraph::gui
