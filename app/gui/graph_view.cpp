// GraphView (see graph_view.h).
#include "gui/graph_view.h"

#include <algorithm>
#include <cmath>

#include <QtGui/QKeyEvent>
#include <QtGui/QMouseEvent>
#include <QtGui/QPainter>
#include <QtGui/QWheelEvent>
#include <QtWidgets/QScrollBar>

#include "gui/graph_scene.h"
#include "gui/group_item.h"
#include "gui/minimap.h"

namespace vidgraph::gui {

namespace {
constexpr qreal kMinZoom = 0.1;
constexpr qreal kMaxZoom = 4.0;
constexpr qreal kGrid = 24.0;
}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent), minimap_(new Minimap(this)) {
  minimap_->hide();
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setDragMode(QGraphicsView::RubberBandDrag);
  setRubberBandSelectionMode(Qt::IntersectsItemShape);
  setTransformationAnchor(QGraphicsView::NoAnchor);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFocusPolicy(Qt::StrongFocus);
  setAcceptDrops(false);  // .vgflow drops are handled by the main window
}

void GraphView::setZoom(qreal factor, QPointF anchorScenePos) {
  factor = std::clamp(factor, kMinZoom, kMaxZoom);
  const QPoint anchorView = mapFromScene(anchorScenePos);
  QTransform t;
  t.scale(factor, factor);
  setTransform(t);
  // Keep the anchor under the same view pixel.
  const QPointF moved = mapToScene(anchorView) - anchorScenePos;
  translate(moved.x(), moved.y());
}

void GraphView::zoomBy(qreal factor) {
  setZoom(zoom() * factor, cursorScenePos());
}

void GraphView::fitToNodes(QRectF rect) {
  if (!rect.isValid()) {
    if (auto* s = dynamic_cast<GraphScene*>(scene())) {
      rect = s->nodesBoundingRect();
      for (const GroupItem* g : s->groupItems()) rect |= g->sceneRect();  // group titles stay in view
    }
  }
  if (!rect.isValid() || rect.isEmpty()) {
    setZoom(1.0, mapToScene(viewport()->rect().center()));
    centerOn(QPointF(300, 200));
    return;
  }
  rect.adjust(-40, -40, 40, 40);
  const qreal sx = viewport()->width() / rect.width();
  const qreal sy = viewport()->height() / rect.height();
  QTransform t;
  const qreal z = std::clamp(std::min(sx, sy), 0.2, 1.5);
  t.scale(z, z);
  setTransform(t);
  centerOn(rect.center());
}

QPointF GraphView::cursorScenePos() const {
  const QPoint p = viewport()->mapFromGlobal(QCursor::pos());
  return viewport()->rect().contains(p) ? mapToScene(p) : mapToScene(viewport()->rect().center());
}

void GraphView::drawBackground(QPainter* painter, const QRectF& rect) {
  painter->fillRect(rect, QColor(0x1d, 0x1e, 0x22));
  if (zoom() < 0.3) return;  // too dense to help
  const qreal left = std::floor(rect.left() / kGrid) * kGrid;
  const qreal top = std::floor(rect.top() / kGrid) * kGrid;
  QVector<QLineF> fine, coarse;
  for (qreal x = left; x < rect.right(); x += kGrid) {
    (std::fmod(std::abs(x), kGrid * 5) < 0.5 ? coarse : fine) << QLineF(x, rect.top(), x, rect.bottom());
  }
  for (qreal y = top; y < rect.bottom(); y += kGrid) {
    (std::fmod(std::abs(y), kGrid * 5) < 0.5 ? coarse : fine) << QLineF(rect.left(), y, rect.right(), y);
  }
  painter->setPen(QPen(QColor(0x26, 0x27, 0x2c), 0));
  painter->drawLines(fine);
  painter->setPen(QPen(QColor(0x30, 0x31, 0x38), 0));
  painter->drawLines(coarse);
}

void GraphView::setEmptyHint(const QString& text) {
  emptyHint_ = text;
  viewport()->update();
}

bool GraphView::emptyHintShown() const {
  const auto* s = dynamic_cast<const GraphScene*>(scene());
  return !emptyHint_.isEmpty() && s && s->nodeItemCount() == 0;
}

QRect GraphView::emptyHintRect() const {
  const QRect v = viewport()->rect();
  const int w = std::min(v.width() - 40, 560);
  return QRect(v.center().x() - w / 2, v.center().y() - 60, w, 120);
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  minimap_->placeInCorner();
}

void GraphView::drawForeground(QPainter* painter, const QRectF& rect) {
  QGraphicsView::drawForeground(painter, rect);
  // Every pan, zoom and scene change repaints the canvas; the (opaque) minimap follows.
  if (minimap_->isVisible()) {
    minimap_->viewMoved();
    minimap_->update();
  }
  if (!emptyHintShown()) return;
  // Drawn in viewport pixels, so it stays put and readable at any zoom.
  painter->save();
  painter->resetTransform();
  painter->setPen(QColor(0x8a, 0x8d, 0x96));
  QFont font = painter->font();
  font.setPointSizeF(font.pointSizeF() * 1.15);
  painter->setFont(font);
  painter->drawText(emptyHintRect(), Qt::AlignCenter | Qt::TextWordWrap, emptyHint_);
  painter->restore();
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const qreal steps = event->angleDelta().y() / 120.0;
  if (steps == 0) return;
  setZoom(zoom() * std::pow(1.15, steps), mapToScene(event->position().toPoint()));
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  const bool pan = event->button() == Qt::MiddleButton || event->button() == Qt::RightButton ||
                   (event->button() == Qt::LeftButton && spaceHeld_);
  if (pan) {
    panning_ = true;
    lastPanPos_ = event->pos();
    rightPress_ = event->button() == Qt::RightButton;
    rightPressPos_ = event->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (panning_) {
    if ((event->pos() - rightPressPos_).manhattanLength() > 4) rightPress_ = false;
    const QPointF delta = mapToScene(event->pos()) - mapToScene(lastPanPos_);
    lastPanPos_ = event->pos();
    translate(delta.x(), delta.y());
    event->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (panning_) {
    panning_ = false;
    viewport()->unsetCursor();
    event->accept();
    if (rightPress_ && event->button() == Qt::RightButton) Q_EMIT contextMenuRequested(event->pos());
    rightPress_ = false;
    return;
  }
  QGraphicsView::mouseReleaseEvent(event);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton && !itemAt(event->pos())) {
    Q_EMIT paletteRequested(mapToScene(event->pos()));
    event->accept();
    return;
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
    spaceHeld_ = true;
    event->accept();
    return;
  }
  if (event->key() == Qt::Key_Tab) {
    Q_EMIT paletteRequested(cursorScenePos());
    event->accept();
    return;
  }
  QGraphicsView::keyPressEvent(event);
}

void GraphView::keyReleaseEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
    spaceHeld_ = false;
    event->accept();
    return;
  }
  QGraphicsView::keyReleaseEvent(event);
}

bool GraphView::focusNextPrevChild(bool next) {
  (void)next;
  return false;  // Tab opens the palette instead of moving focus
}

}  // namespace vidgraph::gui
