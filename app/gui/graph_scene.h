// GraphScene: the canvas model. It observes the DocumentController (one NodeItem per node, one
// ConnectionItem per link, updated from documentChanged) and the RunController (node states,
// preview thumbnails), and turns mouse gestures into controller edits: wires dragged from port to
// port (refusals shown with their reason), wires picked up from a connected input (moved or
// removed), node moves and resizes, group and reroute point drags (one undo step per drag).
//
// Contract: the scene never changes the document directly; every edit goes through the controller,
// and the scene's items change only in response to documentChanged. Node ids are the keys.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <QtCore/QVector>
#include <QtWidgets/QGraphicsScene>

#include "engine/document.h"
#include "gui/node_item.h"

namespace vidgraph::gui {

class ConnectionItem;
class DocumentController;
class GroupItem;
class RunController;

struct WireDrop {
  std::string node;   // the node the wire was dragged from
  QString port;       // its port
  QString type;       // the port's value type
  bool fromOutput = true;
  QPointF scenePos;   // where it was dropped
};

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit GraphScene(DocumentController* controller, QObject* parent = nullptr);
  ~GraphScene() override;

  void setRunController(RunController* run);
  DocumentController* controller() const { return controller_; }

  NodeItem* nodeItem(const std::string& id) const;
  ConnectionItem* connectionItem(const std::string& toNode, const QString& input) const;
  std::size_t nodeItemCount() const { return nodes_.size(); }
  std::size_t connectionItemCount() const { return wires_.size(); }
  std::vector<std::string> selectedNodeIds() const;  // in document order
  void selectNodes(const std::vector<std::string>& ids);
  QRectF nodesBoundingRect() const;
  // Where a node without a stored position is drawn (grid by document index).
  static QPointF defaultPosition(std::size_t index);

  // Groups, in the file's order (later ones drawn on top); the topmost group at a point, or null.
  const std::vector<GroupItem*>& groupItems() const { return groups_; }
  GroupItem* groupAt(QPointF scenePos) const;
  // The nodes a group holds: those lying wholly inside its rectangle (they move with it).
  std::vector<std::string> nodesInGroup(const GroupItem* group) const;

  // The port under a scene point, on any node.
  std::optional<PortHit> portAt(QPointF scenePos) const;
  // What releasing a wire dragged from `from` at `scenePos` does (also used by the mouse handlers).
  // `detached` = the input the wire was picked up from, if any. Returns the refusal, if refused.
  engine::Status dropWire(const PortHit& from, QPointF scenePos,
                          const std::optional<std::pair<std::string, QString>>& detached = std::nullopt);
  const QString& lastRefusal() const { return lastRefusal_; }

  // Called by NodeItem when it moved or changed size: re-routes its wires.
  void nodeGeometryChanged(NodeItem* item);

 Q_SIGNALS:
  void message(const QString& text);
  void wireDroppedOnCanvas(const vidgraph::gui::WireDrop& drop);
  void nodeDoubleClicked(const QString& nodeId);

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  void onDocumentChanged(const engine::DocumentChange& change);
  void rebuild(bool keepSelection = true);
  void clearItems();
  void addNodeItem(const engine::Node& node, std::size_t index);
  void removeNodeItem(const std::string& id);
  void addWire(const std::string& toNode, const std::string& input);
  void removeWire(const std::string& toNode, const std::string& input);
  void updateWire(ConnectionItem* wire);
  void syncNodeWires(const std::string& id);
  void refreshStatus(const std::string& id);
  // A run names the nodes of an open subgraph by path ("inst/inner"): the run's id of a node shown
  // as `id`, and the shown id of a run's node (for a node inside an instance shown, the instance; ""
  // when it is not on the level shown).
  std::string runNodeId(const std::string& id) const;
  std::string shownNodeId(const std::string& runId) const;
  void refreshProblems(const std::string& id);
  void refreshSummary(const std::string& id);
  void showRefusal(const QString& reason, QPointF scenePos);
  void setHighlight(const QString& type, bool outputs);
  void finishMove();
  bool startResize(QPointF scenePos);
  void finishResize();
  void rebuildGroups();
  bool startGroupDrag(QPointF scenePos);
  void finishGroupDrag();
  bool startRerouteDrag(QPointF scenePos);
  void finishRerouteDrag();

  DocumentController* controller_;
  RunController* run_ = nullptr;
  std::map<std::string, NodeItem*> nodes_;
  std::map<std::pair<std::string, QString>, ConnectionItem*> wires_;  // (to node, input) → wire

  // Wire drag in progress.
  std::optional<PortHit> dragFrom_;
  std::optional<std::pair<std::string, QString>> dragDetached_;
  ConnectionItem* dragWire_ = nullptr;
  // Node drag in progress: positions at press.
  std::map<std::string, QPointF> pressPositions_;
  // Node resize in progress (a drag of a node's bottom-right corner): the node and its size at press.
  std::string resizing_;
  QSizeF resizeFrom_;
  QPointF resizePress_;
  std::vector<GroupItem*> groups_;
  // Group drag in progress (by its title bar): the group, the press point, its nodes at press.
  GroupItem* draggedGroup_ = nullptr;
  QPointF groupPress_;
  QPointF groupFrom_;
  std::map<std::string, QPointF> groupMembers_;
  // Reroute point drag in progress: the wire (to node, input), the point, the points as dragged.
  struct RerouteDrag {
    std::pair<std::string, QString> wire;
    int index = 0;
    QVector<QPointF> points;
  };
  std::optional<RerouteDrag> rerouteDrag_;
  QString lastRefusal_;
};

}  // namespace vidgraph::gui

Q_DECLARE_METATYPE(vidgraph::gui::WireDrop)
