// GroupItem (see group_item.h).
#include "gui/group_item.h"

#include <algorithm>

#include <QtGui/QPainter>
#include <QtWidgets/QStyleOptionGraphicsItem>

#include "gui/node_item.h"

namespace vidgraph::gui {

GroupItem::GroupItem(int index, QString title, QRectF rect)
    : index_(index), title_(std::move(title)), size_(rect.size()) {
  setPos(rect.topLeft());
  setZValue(-1);  // behind wires (0) and nodes (1)
  setAcceptedMouseButtons(Qt::NoButton);
  setToolTip(QObject::tr("Group “%1”: drag its title bar to move it with its nodes; right-click to rename or delete it")
                 .arg(title_));
}

QRectF GroupItem::boundingRect() const {
  return QRectF(QPointF(-1, -1), size_ + QSizeF(2, 2));
}

bool GroupItem::inTitleBar(QPointF scenePos) const {
  return QRectF(pos(), QSizeF(size_.width(), kTitleHeight)).contains(scenePos);
}

void GroupItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) {
  (void)widget;
  painter->setRenderHint(QPainter::Antialiasing);
  const QRectF body(QPointF(0, 0), size_);
  painter->setPen(QPen(QColor(0x6f, 0x8f, 0xb8, 160), 1.5));
  painter->setBrush(QColor(0x4a, 0x6a, 0x94, 48));
  painter->drawRoundedRect(body, 6, 6);
  painter->setPen(Qt::NoPen);
  painter->setBrush(QColor(0x4a, 0x6a, 0x94, 110));
  painter->drawRoundedRect(QRectF(0, 0, size_.width(), kTitleHeight), 6, 6);
  const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
  if (!NodeItem::drawsTitleAt(lod)) return;
  QFont f = painter->font();
  f.setBold(true);
  // As node titles: at least ~10 screen pixels when zoomed out, never taller than the bar.
  f.setPixelSize(int(std::min(std::max(15.0, 10.0 / lod), kTitleHeight * 0.8)));
  painter->setFont(f);
  painter->setPen(QColor(0xe8, 0xee, 0xf6));
  painter->drawText(QRectF(10, 0, size_.width() - 20, kTitleHeight), Qt::AlignVCenter | Qt::AlignLeft,
                    painter->fontMetrics().elidedText(title_, Qt::ElideRight, int(size_.width() - 20)));
}

}  // namespace vidgraph::gui
