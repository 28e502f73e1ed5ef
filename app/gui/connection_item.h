// ConnectionItem: one link drawn as a cubic curve from an output connector to an input connector,
// coloured by the link's value type. Also used, without ids, for the wire being dragged.
#pragma once

#include <string>

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

  // Re-routes the curve between two scene points (start = output side).
  void setEnds(QPointF start, QPointF end);

 private:
  std::string fromNode_;
  QString fromOutput_;
  std::string toNode_;
  QString toInput_;
  QString valueType_;
};

}  // namespace vidgraph::gui
