// GraphScene: mouse gestures (see graph_scene.h): wires dragged port to port, wires picked up from a
// connected input, node moves and resizes (the bottom-right corner) committed as one undo step on
// release.
#include <utility>

#include <QtCore/QTimer>
#include <QtWidgets/QGraphicsSceneMouseEvent>
#include <QtWidgets/QGraphicsSimpleTextItem>

#include "engine/operations.h"
#include "gui/connection_item.h"
#include "gui/document_controller.h"
#include "gui/graph_scene.h"
#include "gui/group_item.h"

namespace vidgraph::gui {

std::optional<PortHit> GraphScene::portAt(QPointF scenePos) const {
  // Topmost node first, so overlapping nodes behave as drawn.
  for (QGraphicsItem* item : items(QRectF(scenePos - QPointF(14, 14), QSizeF(28, 28)))) {
    if (item->type() != NodeItem::Type) continue;
    if (auto hit = static_cast<NodeItem*>(item)->portAt(scenePos)) return hit;
  }
  return std::nullopt;
}

engine::Status GraphScene::dropWire(const PortHit& from, QPointF scenePos,
                                    const std::optional<std::pair<std::string, QString>>& detached) {
  lastRefusal_.clear();
  const auto target = portAt(scenePos);
  const bool overNode = std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& entry) {
    return entry.second->sceneBoundingRect().contains(scenePos);
  });
  engine::Status status;
  if (!target) {
    if (detached) {
      status = controller_->disconnectInput(detached->first, detached->second.toStdString());
    } else if (!overNode) {
      Q_EMIT wireDroppedOnCanvas(WireDrop{from.node, from.port, from.type, from.isOutput, scenePos});
      return {};
    } else {
      status = engine::make_error("drop the wire on a port of the node");
    }
  } else if (target->isOutput == from.isOutput) {
    status = engine::make_error(from.isOutput ? "an output connects to an input, not to another output"
                                              : "an input connects to an output, not to another input");
  } else {
    const PortHit& out = from.isOutput ? from : *target;
    const PortHit& in = from.isOutput ? *target : from;
    if (detached && detached->first == in.node && detached->second == in.port) return {};  // put back
    if (detached) {
      // Moving a picked-up wire: one step that removes it and connects the new input.
      std::vector<engine::OperationPtr> parts;
      parts.push_back(engine::make_disconnect(detached->first, detached->second.toStdString()));
      const engine::Node* n = controller_->document().find_node(in.node);
      if (n && n->inputs.count(in.port.toStdString())) {
        parts.push_back(engine::make_disconnect(in.node, in.port.toStdString()));
      }
      parts.push_back(engine::make_connect(in.node, in.port.toStdString(),
                                           engine::InputLink{out.node, out.port.toStdString()}));
      status = controller_->apply(engine::make_composite("Move link to '" + in.node + "." + in.port.toStdString() + "'",
                                                         std::move(parts)));
    } else {
      status = controller_->connectPorts(out.node, out.port.toStdString(), in.node, in.port.toStdString());
    }
  }
  if (!status.ok()) showRefusal(QString::fromStdString(status.error().message), scenePos);
  return status;
}

void GraphScene::showRefusal(const QString& reason, QPointF scenePos) {
  lastRefusal_ = reason;
  Q_EMIT message(QStringLiteral("Connection refused: ") + reason);
  auto* label = new QGraphicsSimpleTextItem(QStringLiteral("✕ ") + reason);
  label->setBrush(QColor(0xff, 0x8a, 0x80));
  label->setPos(scenePos + QPointF(12, -24));
  label->setZValue(10);
  addItem(label);
  QTimer::singleShot(3000, this, [this, label] {
    if (items().contains(label)) {
      removeItem(label);
      delete label;
    }
  });
}

void GraphScene::setHighlight(const QString& type, bool outputs) {
  for (auto& [id, item] : nodes_) item->setHighlight(type, outputs);
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    if (auto hit = portAt(event->scenePos())) {
      dragDetached_.reset();
      const engine::Node* n = controller_->document().find_node(hit->node);
      auto linked = n && !hit->isOutput ? n->inputs.find(hit->port.toStdString()) : decltype(n->inputs.end()){};
      if (n && !hit->isOutput && linked != n->inputs.end()) {
        // Pick up the existing wire by its input end: drag continues from the source output.
        dragDetached_ = std::make_pair(hit->node, hit->port);
        NodeItem* src = nodeItem(linked->second.node);
        const QString output = QString::fromStdString(linked->second.output);
        QString type = QStringLiteral("*");
        if (src) {
          if (auto p = src->findPort(output, true)) type = p->type;
        }
        hit = PortHit{linked->second.node, output, type, true};
        if (ConnectionItem* w = connectionItem(dragDetached_->first, dragDetached_->second)) w->setVisible(false);
      }
      dragFrom_ = hit;
      dragWire_ = new ConnectionItem({}, {}, {}, {}, hit->type);
      dragWire_->setZValue(5);
      addItem(dragWire_);
      NodeItem* anchor = nodeItem(hit->node);
      const QPointF start = anchor ? anchor->portScenePos(hit->port, hit->isOutput) : event->scenePos();
      hit->isOutput ? dragWire_->setEnds(start, event->scenePos()) : dragWire_->setEnds(event->scenePos(), start);
      setHighlight(hit->type, !hit->isOutput);
      event->accept();
      return;
    }
    if (startRerouteDrag(event->scenePos()) || startResize(event->scenePos()) || startGroupDrag(event->scenePos())) {
      event->accept();
      return;
    }
  }
  QGraphicsScene::mousePressEvent(event);
  pressPositions_.clear();
  for (const auto& id : selectedNodeIds()) pressPositions_[id] = nodeItem(id)->pos();
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent* event) {
  if (dragFrom_ && dragWire_) {
    NodeItem* anchor = nodeItem(dragFrom_->node);
    const QPointF start = anchor ? anchor->portScenePos(dragFrom_->port, dragFrom_->isOutput) : QPointF();
    dragFrom_->isOutput ? dragWire_->setEnds(start, event->scenePos()) : dragWire_->setEnds(event->scenePos(), start);
    event->accept();
    return;
  }
  if (NodeItem* item = resizing_.empty() ? nullptr : nodeItem(resizing_)) {
    const QPointF delta = event->scenePos() - resizePress_;
    item->setSize(resizeFrom_ + QSizeF(delta.x(), delta.y()));
    event->accept();
    return;
  }
  if (rerouteDrag_) {
    rerouteDrag_->points[rerouteDrag_->index] = event->scenePos();
    if (ConnectionItem* wire = connectionItem(rerouteDrag_->wire.first, rerouteDrag_->wire.second)) updateWire(wire);
    event->accept();
    return;
  }
  if (draggedGroup_) {
    const QPointF delta = event->scenePos() - groupPress_;
    draggedGroup_->setPos(groupFrom_ + delta);
    for (const auto& [id, from] : groupMembers_) {
      if (NodeItem* item = nodeItem(id)) item->setPos(from + delta);
    }
    event->accept();
    return;
  }
  QGraphicsScene::mouseMoveEvent(event);
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
  if (dragFrom_) {
    const PortHit from = *dragFrom_;
    const auto detached = dragDetached_;
    dragFrom_.reset();
    dragDetached_.reset();
    delete dragWire_;
    dragWire_ = nullptr;
    setHighlight({}, false);
    if (detached) {
      if (ConnectionItem* w = connectionItem(detached->first, detached->second)) w->setVisible(true);
    }
    (void)dropWire(from, event->scenePos(), detached);
    event->accept();
    return;
  }
  if (!resizing_.empty() || draggedGroup_ || rerouteDrag_) {
    if (rerouteDrag_) finishRerouteDrag();
    else if (draggedGroup_) finishGroupDrag();
    else finishResize();
    event->accept();
    return;
  }
  QGraphicsScene::mouseReleaseEvent(event);
  finishMove();
}

bool GraphScene::startResize(QPointF scenePos) {
  for (QGraphicsItem* item : items(scenePos)) {
    if (item->type() != NodeItem::Type) continue;
    auto* node = static_cast<NodeItem*>(item);
    if (!node->inResizeGrip(scenePos)) return false;  // the topmost node is not at its corner
    resizing_ = node->nodeId();
    resizeFrom_ = node->size();
    resizePress_ = scenePos;
    return true;
  }
  return false;
}

bool GraphScene::startRerouteDrag(QPointF scenePos) {
  for (QGraphicsItem* item : items(scenePos)) {
    if (item->type() == NodeItem::Type) return false;  // nodes are drawn over reroute points
    if (item->type() != RerouteItem::Type) continue;
    auto* dot = static_cast<RerouteItem*>(item);
    rerouteDrag_ = RerouteDrag{{dot->wire()->toNode(), dot->wire()->toInput()}, dot->index(), dot->wire()->reroutePoints()};
    return true;
  }
  return false;
}

void GraphScene::finishRerouteDrag() {
  const RerouteDrag drag = *std::exchange(rerouteDrag_, std::nullopt);
  const std::string toNode = drag.wire.first, input = drag.wire.second.toStdString();
  if (drag.points == controller_->reroutePoints(toNode, input)) return;
  auto status = controller_->setReroutePoints(toNode, input, drag.points);
  if (!status.ok()) Q_EMIT message(QString::fromStdString(status.error().message));
  if (ConnectionItem* wire = connectionItem(drag.wire.first, drag.wire.second)) updateWire(wire);
}

bool GraphScene::startGroupDrag(QPointF scenePos) {
  for (QGraphicsItem* item : items(scenePos)) {
    if (item->type() == NodeItem::Type) return false;  // a node over the title bar takes the press
  }
  GroupItem* group = groupAt(scenePos);
  if (!group || !group->inTitleBar(scenePos)) return false;
  draggedGroup_ = group;
  groupPress_ = scenePos;
  groupFrom_ = group->pos();
  groupMembers_.clear();
  for (const std::string& id : nodesInGroup(group)) groupMembers_[id] = nodeItem(id)->pos();
  return true;
}

void GraphScene::finishGroupDrag() {
  GroupItem* group = std::exchange(draggedGroup_, nullptr);
  const QPointF delta = group->pos() - groupFrom_;
  std::map<std::string, QPointF> moved;
  for (const auto& [id, from] : std::exchange(groupMembers_, {})) moved[id] = from + delta;
  if (delta.isNull()) return;
  // The document's change rebuilds the group items: `group` is not used after this.
  auto status = controller_->moveGroup(group->index(), delta, moved);
  if (status.ok()) return;
  rebuildGroups();
  for (const auto& [id, to] : moved) {
    if (NodeItem* item = nodeItem(id)) item->setPos(controller_->nodePosition(id, item->pos()));
  }
  Q_EMIT message(QString::fromStdString(status.error().message));
}

void GraphScene::finishResize() {
  const std::string id = std::exchange(resizing_, {});
  NodeItem* item = nodeItem(id);
  if (!item || item->size() == resizeFrom_) return;
  auto status = controller_->resizeNode(id, item->size());
  if (status.ok()) return;
  item->setSize(controller_->nodeSize(id).value_or(QSizeF()));  // back to the document's size
  Q_EMIT message(QString::fromStdString(status.error().message));
}

void GraphScene::finishMove() {
  std::map<std::string, QPointF> moved;
  for (const auto& [id, before] : pressPositions_) {
    NodeItem* item = nodeItem(id);
    if (item && item->pos() != before) moved[id] = item->pos();
  }
  pressPositions_.clear();
  if (moved.empty()) return;
  auto status = controller_->moveNodes(moved);
  if (!status.ok()) Q_EMIT message(QString::fromStdString(status.error().message));
}

void GraphScene::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  for (QGraphicsItem* item : items(event->scenePos())) {
    if (item->type() == NodeItem::Type) {
      Q_EMIT nodeDoubleClicked(QString::fromStdString(static_cast<NodeItem*>(item)->nodeId()));
      event->accept();
      return;
    }
  }
  QGraphicsScene::mouseDoubleClickEvent(event);
}

}  // namespace vidgraph::gui
