// GroupItem: a titled rectangle drawn behind the nodes (a group of the editor layout). The nodes
// inside it move with it when its title bar is dragged (the scene does that; see graph_scene.h).
//
// Contract: a GroupItem only displays; it takes no mouse buttons (the scene handles the title-bar
// drag, the window the context menu). Its position is the group rectangle's top-left corner.
#pragma once

#include <QtWidgets/QGraphicsItem>

namespace vidgraph::gui {

class GroupItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  static constexpr qreal kTitleHeight = 30;

  GroupItem(int index, QString title, QRectF rect);

  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int index() const { return index_; }  // its place in the file's group list
  const QString& title() const { return title_; }
  QRectF sceneRect() const { return QRectF(pos(), size_); }
  bool inTitleBar(QPointF scenePos) const;

 private:
  int index_;
  QString title_;
  QSizeF size_;
};

}  // namespace vidgraph::gui
