// ConnectionItem: one link drawn as a cubic curve from an output connector to an input connector,
// coloured by the link's value type, through its reroute points (dots, RerouteItem children, that
// the scene lets the user drag). Also used, without ids, for the wire being dragged.
#pragma once

#include <string>

#include <QtCore/QVector>

#include <QtWidgets/QGraphicsEllipseItem>
#include <QtWidgets/QGraphicsPathItem>

namespace vidgraph::gui {

class ConnectionItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 2 };

  ConnectionItem(std::string fromNode, QString fromOutput, std::string toNode, QString toInput, QString valueType);

  int type() const override { return Type; }
  const std::string& fromNode() const { return fromNode_; }
  const QString& fromOutput() const { return fromOutput_; }
  const std::string& toNode() const { return toNode_; }
  const QString& toInput() const { return toInput_; }
  const QString& valueType() const { return valueType_; }

  // Hit area: a band along the curve (not the area the open curve encloses), for clicks on wires.
  QPainterPath shape() const override;

  // Re-routes the curve between two scene points (start = output side), through `points` (scene
  // positions of its reroute points, output side first), each drawn as a dot.
  void setEnds(QPointF start, QPointF end, const QVector<QPointF>& points = {});
  const QVector<QPointF>& reroutePoints() const { return points_; }

 private:
  std::string fromNode_;
  QString fromOutput_;
  std::string toNode_;
  QString toInput_;
  QString valueType_;
  QVector<QPointF> points_;
};

// A reroute point's dot on its wire (a child of the ConnectionItem); `index` = its place on the wire.
class RerouteItem : public QGraphicsEllipseItem {
 public:
  enum { Type = UserType + 4 };
  static constexpr qreal kRadius = 6;

  RerouteItem(ConnectionItem* wire, int index);
  int type() const override { return Type; }
  int index() const { return index_; }
  ConnectionItem* wire() const { return static_cast<ConnectionItem*>(parentItem()); }

 private:
  int index_;
};

}  // namespace vidgraph::gui
