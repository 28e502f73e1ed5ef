// Minimap (see minimap.h).
#include "gui/minimap.h"

#include <algorithm>

#include <QtGui/QMouseEvent>
#include <QtGui/QPainter>

#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/group_item.h"

namespace vidgraph::gui {

namespace {

constexpr qreal kPad = 6;  // pixels around the drawn world

}  // namespace

Minimap::Minimap(GraphView* view) : QWidget(view), view_(view) {
  setObjectName(QStringLiteral("minimap"));
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFixedSize(kWidth, kHeight);
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Minimap: click or drag to move the view"));
}

void Minimap::placeInCorner() {
  const QRect area = view_->viewport()->geometry();
  move(area.right() - width() - 10, area.bottom() - height() - 10);
  raise();
}

QRectF Minimap::visibleSceneRect() const {
  return view_->mapToScene(view_->viewport()->rect()).boundingRect();
}

QRectF Minimap::world() const {
  QRectF r = visibleSceneRect();
  if (auto* s = dynamic_cast<GraphScene*>(view_->scene())) {
    r |= s->nodesBoundingRect();
    for (const GroupItem* g : s->groupItems()) r |= g->sceneRect();
  }
  return r.adjusted(-40, -40, 40, 40);
}

QPointF Minimap::toMinimap(QPointF scenePos) const {
  const QRectF w = world();
  const qreal scale = std::min((width() - 2 * kPad) / w.width(), (height() - 2 * kPad) / w.height());
  const QPointF offset((width() - w.width() * scale) / 2, (height() - w.height() * scale) / 2);
  return offset + (scenePos - w.topLeft()) * scale;
}

QPointF Minimap::toScene(QPointF minimapPos) const {
  const QRectF w = world();
  const qreal scale = std::min((width() - 2 * kPad) / w.width(), (height() - 2 * kPad) / w.height());
  const QPointF offset((width() - w.width() * scale) / 2, (height() - w.height() * scale) / 2);
  return w.topLeft() + (minimapPos - offset) / scale;
}

void Minimap::viewMoved() {
  const QRectF visible = visibleSceneRect();
  if (visible == lastVisible_) return;
  lastVisible_ = visible;
  update();
}

void Minimap::paintEvent(QPaintEvent* event) {
  (void)event;
  QPainter p(this);
  p.fillRect(rect(), QColor(0x16, 0x17, 0x1a));
  p.setPen(QColor(0x3a, 0x3c, 0x44));
  p.drawRect(rect().adjusted(0, 0, -1, -1));
  auto* scene = dynamic_cast<GraphScene*>(view_->scene());
  if (!scene) return;
  auto mapped = [this](const QRectF& r) { return QRectF(toMinimap(r.topLeft()), toMinimap(r.bottomRight())); };
  p.setPen(QColor(0x6f, 0x8f, 0xb8));
  p.setBrush(QColor(0x4a, 0x6a, 0x94, 70));
  for (const GroupItem* g : scene->groupItems()) p.drawRect(mapped(g->sceneRect()));
  p.setPen(Qt::NoPen);
  for (QGraphicsItem* item : scene->items()) {
    if (item->type() != NodeItem::Type) continue;
    p.setBrush(item->isSelected() ? QColor(0xff, 0xc1, 0x07) : QColor(0xa8, 0xab, 0xb3));
    p.drawRect(mapped(item->sceneBoundingRect()));
  }
  p.setPen(QPen(QColor(0xff, 0xff, 0xff, 200), 1.2));
  p.setBrush(Qt::NoBrush);
  p.drawRect(mapped(visibleSceneRect()));
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  view_->centerOn(toScene(event->position()));
  update();
  event->accept();
}

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  view_->centerOn(toScene(event->position()));
  update();
  event->accept();
}

}  // namespace vidgraph::gui
