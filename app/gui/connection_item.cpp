// ConnectionItem (see connection_item.h).
#include "gui/connection_item.h"

#include <algorithm>
#include <cmath>

#include <QtGui/QPainterPath>
#include <QtGui/QPen>

#include "gui/port_style.h"

namespace vidgraph::gui {

ConnectionItem::ConnectionItem(std::string fromNode, QString fromOutput, std::string toNode, QString toInput,
                               QString valueType)
    : fromNode_(std::move(fromNode)),
      fromOutput_(std::move(fromOutput)),
      toNode_(std::move(toNode)),
      toInput_(std::move(toInput)),
      valueType_(valueType) {
  QPen pen(portTypeColor(valueType), 2.4);
  pen.setCapStyle(Qt::RoundCap);
  setPen(pen);
  setZValue(0);
  setFlag(ItemIsSelectable, false);
  if (!toNode_.empty()) {
    setToolTip(QStringLiteral("%1.%2 → %3.%4 (%5)")
                   .arg(QString::fromStdString(fromNode_), fromOutput_, QString::fromStdString(toNode_), toInput_,
                        valueType));
  }
}

QPainterPath ConnectionItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path());
}

void ConnectionItem::setEnds(QPointF start, QPointF end, const QVector<QPointF>& points) {
  QPainterPath path(start);
  QPointF from = start;
  for (int i = 0; i <= points.size(); ++i) {
    const QPointF to = i < points.size() ? points[i] : end;
    const qreal dx = std::max<qreal>(points.isEmpty() ? 40.0 : 20.0, std::abs(to.x() - from.x()) * 0.5);
    path.cubicTo(from + QPointF(dx, 0), to - QPointF(dx, 0), to);
    from = to;
  }
  setPath(path);
  if (points.size() != points_.size()) {
    for (QGraphicsItem* child : childItems()) delete child;
    for (int i = 0; i < points.size(); ++i) new RerouteItem(this, i);
  }
  points_ = points;
  for (QGraphicsItem* child : childItems()) {
    if (child->type() == RerouteItem::Type) child->setPos(points_[static_cast<RerouteItem*>(child)->index()]);
  }
}

RerouteItem::RerouteItem(ConnectionItem* wire, int index)
    : QGraphicsEllipseItem(-kRadius, -kRadius, 2 * kRadius, 2 * kRadius, wire), index_(index) {
  setBrush(wire->pen().color());
  setPen(QPen(wire->pen().color().darker(170), 1.5));
  setToolTip(QObject::tr("Reroute point: drag to move it; right-click to delete it"));
}

}  // namespace vidgraph::gui
