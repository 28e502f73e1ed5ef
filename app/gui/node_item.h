// NodeItem: how one document node looks on the canvas: title (category colour), typed ports (colour
// per value type, inputs left, outputs right), inline run state (queued, running with a progress
// bar, cached, done, failed with the message on hover), key params (seed, steps, a prompt's first
// words, file names) and, for preview nodes, a thumbnail.
//
// Contract: a NodeItem only displays; it never edits the document. The scene creates it from the
// document (ports from the node type, or from the links when the type is unknown) and keeps it in
// sync. Positions are item positions in scene coordinates (top-left corner = the layout's "pos").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QtCore/QStringList>
#include <QtGui/QImage>
#include <QtWidgets/QGraphicsItem>

#include "gui/run_controller.h"

namespace vidgraph::gui {

struct PortInfo {
  QString name;
  QString type;
  bool optional = false;
  QString description;
};

struct PortHit {
  std::string node;
  QString port;
  QString type;
  bool isOutput = false;
};

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };

  NodeItem(std::string id, QString title, QString category, QString description, std::vector<PortInfo> inputs,
           std::vector<PortInfo> outputs, bool unknownType);

  // Titles are drawn at every zoom Fit can choose (it clamps to >= 0.2), enlarged when zoomed out;
  // only below that (zoomed out by hand) are they left out.
  static constexpr qreal kMinTitleLevelOfDetail = 0.199;
  static bool drawsTitleAt(qreal levelOfDetail);

  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  const std::string& nodeId() const { return id_; }
  const QString& title() const { return title_; }
  const std::vector<PortInfo>& inputs() const { return inputs_; }
  const std::vector<PortInfo>& outputs() const { return outputs_; }

  // Scene position of a port's connector; the node's centre when the port does not exist.
  QPointF portScenePos(const QString& port, bool isOutput) const;
  // The port whose connector is near `scenePos` (within a few pixels), if any.
  std::optional<PortHit> portAt(QPointF scenePos) const;
  std::optional<PortInfo> findPort(const QString& port, bool isOutput) const;

  void setStatus(const NodeStatus& status);
  const NodeStatus& status() const { return status_; }
  // Problems of the document itself (a dropped link, an invalid param): while any, the node has a
  // red outline and its status line reads "error: …" (a run's state, when there is one, wins).
  void setProblems(const QStringList& problems);
  const QStringList& problems() const { return problems_; }
  // Key params drawn under the ports (see node_summary.h).
  // A collapsed node is its title bar alone; its wires meet the bar's ends, and its ports take no
  // new wires until it is expanded.
  void setCollapsed(bool collapsed);
  bool isCollapsed() const { return collapsed_; }
  // A bypassed node is drawn faded, with "bypassed" in its title bar.
  void setBypassed(bool bypassed);
  bool isBypassed() const { return bypassed_; }
  void setSummary(const QStringList& lines);
  const QStringList& summary() const { return summary_; }
  // A user-chosen size (the layout's "size": [w, h]; an invalid size = the default). The width is
  // at least kMinWidth; the height never cuts the content (extra height goes to the thumbnail).
  static constexpr qreal kMinWidth = 150;
  void setSize(const QSizeF& size);
  QSizeF size() const { return QSizeF(width_, bodyHeight()); }
  // The bottom-right corner a drag resizes from (not on a collapsed node).
  bool inResizeGrip(QPointF scenePos) const;
  void setThumbnail(const QImage& image);
  bool hasThumbnail() const { return !thumbnail_.isNull(); }
  // Ports that accept the wire being dragged are drawn larger; empty type = no highlight.
  void setHighlight(const QString& valueType, bool outputs);

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override;

 private:
  QRectF portRect(int row, bool isOutput) const;
  void updateToolTip();
  void paintBody(QPainter* painter) const;  // ports, summary, thumbnail, status: all but the title bar
  void paintPorts(QPainter* painter) const;
  void paintStatus(QPainter* painter, const QRectF& area) const;
  qreal bodyHeight() const;
  qreal contentHeight() const;  // the height the content needs (thumbnail at its default height)
  qreal thumbnailHeight() const;
  qreal summaryHeight() const;
  void scaleThumbnail();

  std::string id_;
  QString title_;
  QString category_;
  QString description_;
  std::vector<PortInfo> inputs_;
  std::vector<PortInfo> outputs_;
  bool unknownType_ = false;
  bool bypassed_ = false;
  bool collapsed_ = false;
  NodeStatus status_;
  QStringList problems_;
  QStringList summary_;
  QImage thumbnailSource_;  // as posted; thumbnail_ is it scaled to the thumbnail area
  QImage thumbnail_;
  qreal width_;
  qreal userHeight_ = 0;  // 0 = the content's height
  QString highlightType_;
  bool highlightOutputs_ = false;
};

}  // namespace vidgraph::gui
