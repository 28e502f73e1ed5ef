// DocumentController (see document_controller.h).
#include "gui/document_controller.h"

#include <set>

#include <QtCore/QFileInfo>

#include "engine/subgraph_edits.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "gui/clipboard_json.h"
#include "gui/gui_log.h"
#include "gui/operation_command.h"
#include "interop/comfy_import.h"
#include "interop/comfy_report.h"

namespace vidgraph::gui {

namespace {

std::set<std::string> nodeIds(const engine::GraphDocument& doc) {
  std::set<std::string> ids;
  for (const auto& n : doc.nodes()) ids.insert(n.id);
  return ids;
}

}  // namespace

DocumentController::DocumentController(const engine::Registry& registry, QObject* parent)
    : QObject(parent), registry_(registry), doc_(&registry), undoStack_(this) {
  subscription_ = doc_.subscribe([this](const engine::DocumentChange& change) { Q_EMIT documentChanged(change); });
  connect(&undoStack_, &QUndoStack::cleanChanged, this, [this] { Q_EMIT modifiedChanged(isModified()); });
  undoGroup_.addStack(&undoStack_);
  undoGroup_.setActiveStack(&undoStack_);
}

DocumentController::~DocumentController() {
  doc_.unsubscribe(subscription_);
}

std::optional<engine::NodeType> DocumentController::displayType(const engine::Node& node) const {
  if (const engine::NodeType* type = registry_.find(node.type)) return *type;
  if (node.type != engine::kSubgraphType) return std::nullopt;
  auto interface = engine::subgraph_interface(doc_, registry_, node);
  if (!interface.ok()) return std::nullopt;
  return engine::subgraph_node_type(*interface);
}

engine::Result<std::string> DocumentController::makeSubgraph(const std::vector<std::string>& ids,
                                                             const std::string& name) {
  std::string instance;
  auto op = engine::make_subgraph_from(doc_, ids, name, &instance);
  if (!op.ok()) return op.error();
  if (auto status = apply(std::move(op.value())); !status.ok()) return status.error();
  return instance;
}

engine::Status DocumentController::unpackSubgraph(const std::string& id) {
  auto op = engine::make_unpack_subgraph(doc_, id);
  if (!op.ok()) return op.error();
  return apply(std::move(op.value()));
}

engine::Status DocumentController::apply(engine::OperationPtr op) {
  auto inverse = op->apply(doc_);
  if (!inverse.ok()) return inverse.error();
  undoStack()->push(new OperationCommand(doc_, std::move(op), std::move(inverse.value())));
  return {};
}

engine::Result<std::string> DocumentController::addNode(const std::string& type, QPointF pos,
                                                        const std::optional<PendingLink>& link,
                                                        const nlohmann::json& params) {
  const engine::NodeType* t = registry_.find(type);
  if (!t) return engine::make_error("there is no node type named '" + type + "'; pick one from the palette");
  engine::Node node;
  node.type = t->name;
  node.type_version = t->version;
  node.id = doc_.unique_node_id(t->name);
  node.params = t->params_with_defaults(params);
  const std::string id = node.id;
  nlohmann::json layout = {{"pos", {pos.x(), pos.y()}}};
  auto add = engine::make_add_node(std::move(node), engine::GraphDocument::npos, std::move(layout));
  if (!link) {
    auto status = apply(std::move(add));
    if (!status.ok()) return status.error();
    return id;
  }
  std::vector<engine::OperationPtr> parts;
  parts.push_back(std::move(add));
  if (link->fromOutput) {
    parts.push_back(engine::make_connect(id, link->newPort, engine::InputLink{link->node, link->port}));
  } else {
    const engine::Node* consumer = doc_.find_node(link->node);
    if (consumer && consumer->inputs.count(link->port)) parts.push_back(engine::make_disconnect(link->node, link->port));
    parts.push_back(engine::make_connect(link->node, link->port, engine::InputLink{id, link->newPort}));
  }
  auto status = apply(engine::make_composite("Add node '" + id + "' and link it", std::move(parts)));
  if (!status.ok()) return status.error();
  return id;
}

engine::Status DocumentController::connectPorts(const std::string& fromNode, const std::string& output,
                                                const std::string& toNode, const std::string& input) {
  const engine::Node* to = doc_.find_node(toNode);
  const engine::InputLink from{fromNode, output};
  if (to) {
    auto existing = to->inputs.find(input);
    if (existing != to->inputs.end()) {
      if (existing->second == from) return {};
      // Replacing a link: one step that disconnects the old source and connects the new one.
      engine::GraphDocument probe(doc_);
      (void)probe.disconnect(toNode, input);
      auto status = probe.can_connect(toNode, input, from);
      if (!status.ok()) return status;
      std::vector<engine::OperationPtr> parts;
      parts.push_back(engine::make_disconnect(toNode, input));
      parts.push_back(engine::make_connect(toNode, input, from));
      return apply(engine::make_composite("Reconnect '" + toNode + "." + input + "'", std::move(parts)));
    }
  }
  return apply(engine::make_connect(toNode, input, from));
}

engine::Status DocumentController::disconnectInput(const std::string& toNode, const std::string& input) {
  return apply(engine::make_disconnect(toNode, input));
}

engine::Status DocumentController::removeNodes(const std::vector<std::string>& ids) {
  if (ids.empty()) return {};
  return apply(withReroutesFollowing(engine::make_remove_nodes(doc_, ids), ids, {}));
}

engine::Status DocumentController::moveNodes(const std::map<std::string, QPointF>& positions) {
  if (positions.empty()) return {};
  // Wrapped in a composite even for one node: a move is committed once per mouse drag, and two
  // separate drags of the same node must stay two undo steps (move operations would merge).
  std::vector<engine::OperationPtr> parts;
  for (const auto& [id, p] : positions) parts.push_back(engine::make_move_node(id, p.x(), p.y()));
  const std::string what = positions.size() == 1 ? "node '" + positions.begin()->first + "'"
                                                 : std::to_string(positions.size()) + " nodes";
  return apply(engine::make_composite("Move " + what, std::move(parts)));
}

engine::Status DocumentController::setParam(const std::string& nodeId, const std::string& param,
                                            nlohmann::json value) {
  const engine::Node* n = doc_.find_node(nodeId);
  if (!n) return engine::make_error("there is no node '" + nodeId + "'");
  if (n->params.contains(param) && n->params[param] == value) return {};
  return apply(engine::make_set_param(nodeId, param, std::move(value)));
}

engine::Status DocumentController::renameNode(const std::string& oldId, const std::string& newId) {
  if (oldId == newId) return {};
  return apply(withReroutesFollowing(engine::make_rename_node(oldId, newId), {oldId}, newId));
}

engine::Result<std::vector<std::string>> DocumentController::applyAndCollectNew(engine::OperationPtr op) {
  const auto before = nodeIds(doc_);
  auto status = apply(std::move(op));
  if (!status.ok()) return status.error();
  std::vector<std::string> added;
  for (const auto& n : doc_.nodes()) {
    if (!before.count(n.id)) added.push_back(n.id);
  }
  return added;
}

engine::Result<std::vector<std::string>> DocumentController::upgradeNodeTypes() {
  engine::GraphDocument upgraded(doc_);  // the engine upgrades a copy; the edit is set_node_data per node
  auto ids = engine::upgrade_node_types(upgraded, registry_);
  if (!ids.ok()) return ids.error();
  if (ids->empty()) return ids;
  std::vector<engine::OperationPtr> parts;
  for (const auto& id : ids.value()) {
    const engine::Node* n = upgraded.find_node(id);
    parts.push_back(engine::make_set_node_data(id, n->type_version, n->params));
  }
  auto status = apply(engine::make_composite("Upgrade " + std::to_string(ids->size()) + " node(s)", std::move(parts)));
  if (!status.ok()) return status.error();
  return ids;
}

engine::Result<std::vector<std::string>> DocumentController::duplicateNodes(const std::vector<std::string>& ids,
                                                                            QPointF offset) {
  return pasteJson(copyJson(ids), offset);
}

engine::Result<std::vector<std::string>> DocumentController::pasteJson(const QString& json, QPointF offset) {
  auto parsed = parseWorkflowJson(json);
  if (!parsed.ok()) return parsed.error();
  if (parsed->nodes.empty()) return engine::make_error("the clipboard holds no nodes to paste");
  // One step: the nodes, then the reroutes of their links and the groups that came with them.
  const std::map<std::string, std::string> ids = engine::paste_ids(doc_, parsed->nodes);
  std::vector<engine::OperationPtr> parts =
      pasteEditorEntries(doc_, *parsed, ids, offset.x(), offset.y());
  const std::size_t count = parsed->nodes.size();
  parts.insert(parts.begin(), engine::make_paste(doc_, std::move(parsed->nodes), parsed->layouts, offset.x(), offset.y()));
  return applyAndCollectNew(engine::make_composite(
      "Paste " + std::to_string(count) + (count == 1 ? " node" : " nodes"), std::move(parts)));
}

QString DocumentController::copyJson(const std::vector<std::string>& ids, const std::vector<int>& groups) const {
  return nodesToWorkflowJson(doc_, ids, groups);
}

QPointF DocumentController::nodePosition(const std::string& id, QPointF fallback) const {
  const nlohmann::json layout = doc_.node_editor(id);
  if (layout.is_object() && layout.contains("pos")) {
    const auto& p = layout["pos"];
    if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number()) {
      return QPointF(p[0].get<double>(), p[1].get<double>());
    }
  }
  return fallback;
}

void DocumentController::replaceDocument(engine::GraphDocument doc, const QString& path) {
  dropLevels();
  undoStack_.clear();
  doc.set_registry(&registry_);
  doc_ = std::move(doc);  // notifies Reset to the observers (they stay subscribed)
  if (filePath_ != path) {
    filePath_ = path;
    Q_EMIT filePathChanged(path);
  }
}

QStringList DocumentController::nodeProblems(const std::string& id) const {
  QStringList out;
  const engine::Node* node = doc_.find_node(id);
  if (!node) return out;
  if (auto it = droppedInputs_.find(id); it != droppedInputs_.end()) {
    for (const std::string& port : it->second) {
      if (node->inputs.count(port)) continue;  // reconnected
      out << QStringLiteral("input '%1' was linked to a node the file does not have; the link was dropped, "
                            "reconnect it").arg(QString::fromStdString(port));
    }
  }
  if (node->type == engine::kSubgraphType) {
    if (auto interface = engine::subgraph_interface(doc_, registry_, *node); !interface.ok()) {
      out << QString::fromStdString(interface.error().message);
    }
  }
  if (const std::optional<engine::NodeType> type = displayType(*node)) {
    for (const engine::ParamSpec& spec : type->params) {
      auto it = node->params.find(spec.name);
      if (it == node->params.end() || it->is_null()) continue;
      if (auto status = spec.check(*it); !status) out << QString::fromStdString(status.error().message);
    }
  }
  return out;
}

engine::Status DocumentController::setCollapsed(const std::vector<std::string>& ids, bool collapsed) {
  std::vector<engine::OperationPtr> parts;
  for (const std::string& id : ids) {
    if (!doc_.find_node(id) || isCollapsed(id) == collapsed) continue;
    nlohmann::json layout = doc_.node_editor(id);
    if (!layout.is_object()) layout = nlohmann::json::object();
    if (collapsed) layout["collapsed"] = true;
    else layout.erase("collapsed");
    parts.push_back(engine::make_set_node_layout(id, std::move(layout)));
  }
  if (parts.empty()) return {};
  return apply(engine::make_composite(collapsed ? "Collapse nodes" : "Expand nodes", std::move(parts)));
}

bool DocumentController::isCollapsed(const std::string& id) const {
  const nlohmann::json layout = doc_.node_editor(id);
  if (!layout.is_object()) return false;
  const auto it = layout.find("collapsed");  // a file's editor state may hold anything
  return it != layout.end() && it->is_boolean() && it->get<bool>();
}

engine::Status DocumentController::setBypass(const std::vector<std::string>& ids, bool bypass) {
  std::vector<engine::OperationPtr> parts;
  for (const std::string& id : ids) {
    const engine::Node* node = doc_.find_node(id);
    if (node && node->bypass != bypass) parts.push_back(engine::make_set_bypass(id, bypass));
  }
  if (parts.empty()) return {};
  const std::string what = parts.size() == 1 ? parts.front()->description()
                                             : (bypass ? "Bypass " : "Stop bypassing ") + std::to_string(parts.size()) + " nodes";
  return apply(engine::make_composite(what, std::move(parts)));
}

void DocumentController::newDocument() {
  droppedInputs_.clear();
  loadWarnings_.clear();
  importedFrom_.clear();
  sharedSource_.clear();
  replaceDocument(engine::GraphDocument(&registry_), QString());
  undoStack_.setClean();
}

engine::Status DocumentController::open(const QString& path) { return load(path, QFileInfo(path).absoluteFilePath()); }

engine::Status DocumentController::openAsUntitled(const QString& path) { return load(path, QString()); }

engine::Status DocumentController::openEmbedded(const QString& text, const QString& source) {
  return load(source, QString(), text);
}

engine::Status DocumentController::load(const QString& path, const QString& documentPath,
                                        const std::optional<QString>& text) {
  engine::LoadOptions options;
  options.registry = &registry_;
  options.drop_dangling_links = true;  // open it anyway: the nodes are marked and the user reconnects
  auto bytes = text ? engine::Result<std::string>(text->toStdString()) : engine::read_workflow_file(path.toStdString());
  if (!bytes.ok()) return bytes.error();
  if (auto imported = comfy::import_if_comfy(*bytes, path.toStdString(), &registry_)) {
    if (!imported->ok()) return imported->error();
    return adoptImport(std::move(imported->value()), path);
  }
  auto loaded = engine::load_workflow_string(*bytes, options, path.toStdString());
  if (!loaded.ok()) return loaded.error();
  loadWarnings_.clear();
  droppedInputs_.clear();
  importedFrom_.clear();
  sharedSource_.clear();
  for (const auto& w : loaded->warnings) loadWarnings_ << QString::fromStdString(w);
  for (const auto& b : loaded->broken_links) droppedInputs_[b.node].push_back(b.port);
  for (const auto& n : loaded->document.nodes()) {
    const engine::NodeType* type = registry_.find(n.type);
    if (!type && n.type == engine::kSubgraphType) continue;  // its problems are shown on the node
    if (!type) {
      loadWarnings_ << QStringLiteral("Node '%1' has the unknown type '%2'; it is kept as is and saved back unchanged.")
                           .arg(QString::fromStdString(n.id), QString::fromStdString(n.type));
      continue;
    }
    for (const engine::ParamSpec& spec : type->params) {
      auto it = n.params.find(spec.name);
      if (it == n.params.end() || it->is_null()) continue;
      if (auto status = spec.check(*it); !status) {
        loadWarnings_ << QStringLiteral("%1: node '%2': %3; fix it in the inspector")
                             .arg(path, QString::fromStdString(n.id), QString::fromStdString(status.error().message));
      }
    }
  }
  replaceDocument(std::move(loaded->document), documentPath);
  undoStack_.setClean();
  guiLogger()->info("opened {}", path.toStdString());
  return {};
}

engine::Status DocumentController::adoptImport(comfy::ComfyImport imported, const QString& source) {
  loadWarnings_.clear();
  droppedInputs_.clear();
  for (const std::string& line : comfy::report_sentences(imported.report, false)) {
    loadWarnings_ << QString::fromStdString(line);
  }
  comfy::log_import_report(imported.report, source.toStdString());
  replaceDocument(std::move(imported.document), QString());
  importedFrom_ = source;
  sharedSource_ = source;  // a downloaded ComfyUI workflow is as untrusted as a shared video
  undoStack_.setClean();
  undoStack_.resetClean();  // nothing of it is saved yet
  Q_EMIT modifiedChanged(true);
  return {};
}

engine::Status DocumentController::loadText(const QString& text, const QString& path, const QString& source) {
  engine::LoadOptions options;
  options.registry = &registry_;
  const QByteArray utf8 = text.toUtf8();
  auto loaded = engine::load_workflow_string(std::string_view(utf8.constData(), utf8.size()), options,
                                             source.toStdString());
  if (!loaded.ok()) return loaded.error();
  loadWarnings_.clear();
  droppedInputs_.clear();
  replaceDocument(std::move(loaded->document), path);
  // Restored content differs from what is on disk: mark modified by leaving the stack unclean.
  undoStack_.setClean();
  undoStack_.resetClean();
  Q_EMIT modifiedChanged(true);
  return {};
}

engine::Status DocumentController::save(const QString& path) {
  auto whole = workflow();
  if (!whole.ok()) return whole.error();
  auto status = engine::save_workflow_file(*whole, path.toStdString());
  if (!status.ok()) return status;
  const QString absolute = QFileInfo(path).absoluteFilePath();
  if (filePath_ != absolute) {
    filePath_ = absolute;
    Q_EMIT filePathChanged(absolute);
  }
  undoStack_.setClean();
  for (Level& level : levels_) level.stack->setClean();
  guiLogger()->info("saved {}", path.toStdString());
  return {};
}

QString DocumentController::displayName() const {
  return filePath_.isEmpty() ? QStringLiteral("Untitled") : QFileInfo(filePath_).fileName();
}

}  // namespace vidgraph::gui
