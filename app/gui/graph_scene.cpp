// GraphScene: keeping the items in sync with the document and the run states (see graph_scene.h).
// Mouse gestures live in graph_scene_wires.cpp.
#include "gui/graph_scene.h"

#include <algorithm>

#include "engine/registry.h"
#include "gui/connection_item.h"
#include "gui/document_controller.h"
#include "gui/group_item.h"
#include "gui/node_summary.h"
#include "gui/run_controller.h"

namespace vidgraph::gui {

namespace {

std::vector<PortInfo> portsOf(const std::vector<engine::PortSpec>& specs) {
  std::vector<PortInfo> out;
  for (const auto& p : specs) {
    out.push_back(PortInfo{QString::fromStdString(p.name), QString::fromStdString(p.type), p.optional,
                           QString::fromStdString(p.description)});
  }
  return out;
}

}  // namespace

GraphScene::GraphScene(DocumentController* controller, QObject* parent)
    : QGraphicsScene(parent), controller_(controller) {
  qRegisterMetaType<WireDrop>();
  setItemIndexMethod(QGraphicsScene::NoIndex);
  setSceneRect(-20000, -20000, 40000, 40000);
  connect(controller_, &DocumentController::documentChanged, this, &GraphScene::onDocumentChanged);
  rebuild();
}

GraphScene::~GraphScene() {
  // Items go before QGraphicsScene's destructor runs, with signals blocked: selection changes
  // emitted while the scene is half destroyed must not reach listeners.
  blockSignals(true);
  disconnect(controller_, nullptr, this, nullptr);
  clearItems();
}

void GraphScene::clearItems() {
  // Out of the maps before deletion: deleting a selected item emits selectionChanged at once, and
  // its listeners look items up by id (after a load, the new document's ids).
  auto wires = std::move(wires_);
  auto nodes = std::move(nodes_);
  auto groups = std::move(groups_);
  wires_.clear();
  nodes_.clear();
  groups_.clear();
  draggedGroup_ = nullptr;
  rerouteDrag_.reset();
  for (GroupItem* g : groups) delete g;
  for (auto& [key, wire] : wires) delete wire;
  for (auto& [id, item] : nodes) delete item;
}

void GraphScene::setRunController(RunController* run) {
  run_ = run;
  connect(run_, &RunController::nodeStatusChanged, this,
          [this](const QString& id) { refreshStatus(shownNodeId(id.toStdString())); });
  connect(run_, &RunController::statusesCleared, this, [this] {
    for (const auto& [id, item] : nodes_) item->setStatus(NodeStatus{});
  });
  connect(run_, &RunController::previewReceived, this, [this](const QString& id, const PreviewClip& clip) {
    if (NodeItem* item = nodeItem(shownNodeId(id.toStdString())); item && !clip.empty()) {
      item->setThumbnail(clip.frames.front());
    }
  });
  for (const auto& [id, item] : nodes_) refreshStatus(id);
}

NodeItem* GraphScene::nodeItem(const std::string& id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

ConnectionItem* GraphScene::connectionItem(const std::string& toNode, const QString& input) const {
  auto it = wires_.find({toNode, input});
  return it == wires_.end() ? nullptr : it->second;
}

std::vector<std::string> GraphScene::selectedNodeIds() const {
  std::vector<std::string> ids;
  for (const auto& n : controller_->document().nodes()) {
    NodeItem* item = nodeItem(n.id);
    if (item && item->isSelected()) ids.push_back(n.id);
  }
  return ids;
}

void GraphScene::selectNodes(const std::vector<std::string>& ids) {
  clearSelection();
  for (const auto& id : ids) {
    if (NodeItem* item = nodeItem(id)) item->setSelected(true);
  }
}

QRectF GraphScene::nodesBoundingRect() const {
  QRectF r;
  for (const auto& [id, item] : nodes_) r |= item->sceneBoundingRect();
  return r;
}

QPointF GraphScene::defaultPosition(std::size_t index) {
  return QPointF(40.0 + static_cast<double>(index % 4) * 280.0, 40.0 + static_cast<double>(index / 4) * 240.0);
}

void GraphScene::onDocumentChanged(const engine::DocumentChange& change) {
  const engine::GraphDocument& doc = controller_->document();
  switch (change.kind) {
    case engine::ChangeKind::NodeAdded: {
      const std::size_t index = doc.index_of(change.node_id);
      if (index == engine::GraphDocument::npos) break;
      addNodeItem(doc.nodes()[index], index);
      for (const auto& [port, link] : doc.nodes()[index].inputs) addWire(change.node_id, port);
      break;
    }
    case engine::ChangeKind::NodeRemoved: removeNodeItem(change.node_id); break;
    case engine::ChangeKind::LinkAdded:
      addWire(change.node_id, change.port);
      refreshProblems(change.node_id);
      break;
    case engine::ChangeKind::LinkRemoved:
      removeWire(change.node_id, change.port);
      refreshProblems(change.node_id);
      break;
    case engine::ChangeKind::EditorChanged:
      if (change.node_id.empty()) {  // document-wide editor state: groups, reroute points
        rebuildGroups();
        for (auto& [key, wire] : wires_) updateWire(wire);
        break;
      }
      if (NodeItem* item = nodeItem(change.node_id)) {
        item->setPos(controller_->nodePosition(change.node_id, item->pos()));
        item->setCollapsed(controller_->isCollapsed(change.node_id));
        item->setSize(controller_->nodeSize(change.node_id).value_or(QSizeF()));
      }
      break;
    case engine::ChangeKind::ParamChanged:
      refreshProblems(change.node_id);
      refreshSummary(change.node_id);
      break;
    case engine::ChangeKind::NodeRenamed:
    case engine::ChangeKind::NodeUpdated: rebuild(); break;
    case engine::ChangeKind::Reset: rebuild(false); break;  // another document: same ids, other nodes
  }
}

void GraphScene::rebuild(bool keepSelection) {
  const std::vector<std::string> selected = keepSelection ? selectedNodeIds() : std::vector<std::string>{};
  clearItems();
  const auto& nodes = controller_->document().nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) addNodeItem(nodes[i], i);
  for (const auto& n : nodes) {
    for (const auto& [port, link] : n.inputs) addWire(n.id, port);
  }
  rebuildGroups();
  selectNodes(selected);
}

void GraphScene::rebuildGroups() {
  draggedGroup_ = nullptr;
  for (GroupItem* g : groups_) delete g;
  groups_.clear();
  for (const NodeGroup& g : controller_->groups()) {
    auto* item = new GroupItem(g.index, g.title, g.rect);
    addItem(item);
    groups_.push_back(item);
  }
}

GroupItem* GraphScene::groupAt(QPointF scenePos) const {
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
    if ((*it)->sceneRect().contains(scenePos)) return *it;
  }
  return nullptr;
}

std::vector<std::string> GraphScene::nodesInGroup(const GroupItem* group) const {
  std::vector<std::string> ids;
  for (const auto& n : controller_->document().nodes()) {
    NodeItem* item = nodeItem(n.id);
    if (item && group->sceneRect().contains(item->mapRectToScene(QRectF(QPointF(0, 0), item->size())))) ids.push_back(n.id);
  }
  return ids;
}

void GraphScene::addNodeItem(const engine::Node& node, std::size_t index) {
  removeNodeItem(node.id);
  const std::optional<engine::NodeType> known = controller_->displayType(node);
  const engine::NodeType* type = known ? &*known : nullptr;
  NodeItem* item = nullptr;
  if (type) {
    const std::string title = type->display_name.empty() ? type->name : type->display_name;
    item = new NodeItem(node.id, QString::fromStdString(title), QString::fromStdString(type->category),
                        QString::fromStdString(type->description), portsOf(type->inputs), portsOf(type->outputs), false);
  } else {
    // Unknown type: show the ports its links use, so the graph still reads correctly.
    std::vector<PortInfo> inputs, outputs;
    for (const auto& [port, link] : node.inputs) inputs.push_back(PortInfo{QString::fromStdString(port), "*", false, {}});
    std::set<std::string> seen;
    for (const auto& l : controller_->document().links_from(node.id)) {
      if (seen.insert(l.from_output).second) outputs.push_back(PortInfo{QString::fromStdString(l.from_output), "*", false, {}});
    }
    item = new NodeItem(node.id, QString::fromStdString(node.type), QStringLiteral("unknown"), {}, inputs, outputs, true);
  }
  if (type) item->setSummary(nodeSummary(*type, node));
  item->setBypassed(node.bypass);
  item->setCollapsed(controller_->isCollapsed(node.id));
  item->setSize(controller_->nodeSize(node.id).value_or(QSizeF()));
  addItem(item);
  item->setPos(controller_->nodePosition(node.id, defaultPosition(index)));
  nodes_[node.id] = item;
  refreshStatus(node.id);
  refreshProblems(node.id);
}

void GraphScene::removeNodeItem(const std::string& id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  for (auto w = wires_.begin(); w != wires_.end();) {
    if (w->second->toNode() == id || w->second->fromNode() == id) {
      delete w->second;
      w = wires_.erase(w);
    } else {
      ++w;
    }
  }
  NodeItem* item = it->second;
  nodes_.erase(it);  // first: deleting a selected item notifies selection listeners
  delete item;
}

void GraphScene::addWire(const std::string& toNode, const std::string& input) {
  const engine::Node* n = controller_->document().find_node(toNode);
  if (!n) return;
  auto link = n->inputs.find(input);
  if (link == n->inputs.end()) return;
  removeWire(toNode, input);
  QString type = QStringLiteral("*");
  if (NodeItem* from = nodeItem(link->second.node)) {
    if (auto p = from->findPort(QString::fromStdString(link->second.output), true)) type = p->type;
  }
  auto* wire = new ConnectionItem(link->second.node, QString::fromStdString(link->second.output), toNode,
                                  QString::fromStdString(input), type);
  addItem(wire);
  wires_[{toNode, QString::fromStdString(input)}] = wire;
  updateWire(wire);
}

void GraphScene::removeWire(const std::string& toNode, const std::string& input) {
  auto it = wires_.find({toNode, QString::fromStdString(input)});
  if (it == wires_.end()) return;
  delete it->second;
  wires_.erase(it);
}

void GraphScene::updateWire(ConnectionItem* wire) {
  NodeItem* from = nodeItem(wire->fromNode());
  NodeItem* to = nodeItem(wire->toNode());
  if (!from || !to) return;
  wire->setEnds(from->portScenePos(wire->fromOutput(), true), to->portScenePos(wire->toInput(), false),
                rerouteDrag_ && rerouteDrag_->wire == std::make_pair(wire->toNode(), wire->toInput())
                    ? rerouteDrag_->points
                    : controller_->reroutePoints(wire->toNode(), wire->toInput().toStdString()));
}

void GraphScene::syncNodeWires(const std::string& id) {
  for (auto& [key, wire] : wires_) {
    if (wire->fromNode() == id || wire->toNode() == id) updateWire(wire);
  }
}

void GraphScene::nodeGeometryChanged(NodeItem* item) {
  syncNodeWires(item->nodeId());
}

void GraphScene::refreshSummary(const std::string& id) {
  NodeItem* item = nodeItem(id);
  const engine::Node* node = controller_->document().find_node(id);
  const std::optional<engine::NodeType> type = node ? controller_->displayType(*node) : std::nullopt;
  if (item && type) item->setSummary(nodeSummary(*type, *node));
}

void GraphScene::refreshProblems(const std::string& id) {
  if (NodeItem* item = nodeItem(id)) item->setProblems(controller_->nodeProblems(id));
}

void GraphScene::refreshStatus(const std::string& id) {
  if (!run_) return;
  if (NodeItem* item = nodeItem(id)) item->setStatus(run_->shownStatus(runNodeId(id)));
}

std::string GraphScene::runNodeId(const std::string& id) const {
  const std::string path = controller_->levelPath();
  return path.empty() ? id : path + "/" + id;
}

std::string GraphScene::shownNodeId(const std::string& runId) const {
  const std::string path = controller_->levelPath();
  const std::string prefix = path.empty() ? "" : path + "/";
  if (runId.rfind(prefix, 0) != 0) return {};
  const std::string rest = runId.substr(prefix.size());
  return rest.substr(0, rest.find('/'));  // an inner node of an instance shown here: the instance
}

}  // namespace vidgraph::gui
