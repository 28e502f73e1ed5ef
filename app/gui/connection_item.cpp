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

void ConnectionItem::setEnds(QPointF start, QPointF end) {
  const qreal dx = std::max<qreal>(40.0, std::abs(end.x() - start.x()) * 0.5);
  QPainterPath path(start);
  path.cubicTo(start + QPointF(dx, 0), end - QPointF(dx, 0), end);
  setPath(path);
}

}  // namespace vidgraph::gui
