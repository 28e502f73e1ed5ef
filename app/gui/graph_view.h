// GraphView: the canvas widget over a GraphScene: smooth zoom under the cursor (wheel, Ctrl +/-),
// pan (middle or right button drag, or Space + left drag), a grid background, fit-to-view,
// rubber-band selection. Tab or a double-click on empty canvas asks for the node palette; a right
// click (no drag) asks for the context menu. A canvas without nodes shows a hint in its centre; a
// minimap (minimap.h) may overlay its bottom-right corner.
#pragma once

#include <QtWidgets/QGraphicsView>

namespace vidgraph::gui {

class Minimap;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr);

  qreal zoom() const { return transform().m11(); }
  void setZoom(qreal factor, QPointF anchorScenePos);
  void zoomBy(qreal factor);
  // Fits every node and group (or `rect` when valid) in the view, zoom clamped to [0.2, 1.5].
  void fitToNodes(QRectF rect = QRectF());
  // Scene position under the mouse, or the view's centre when the mouse is outside.
  QPointF cursorScenePos() const;
  // The text drawn on a canvas without nodes ("" = none); emptyHintShown() says whether it is drawn now.
  void setEmptyHint(const QString& text);
  bool emptyHintShown() const;
  // Where the hint is drawn, in viewport pixels.
  QRect emptyHintRect() const;
  // The overview in the bottom-right corner (hidden until shown: View ▸ Minimap).
  Minimap* minimap() const { return minimap_; }

 Q_SIGNALS:
  void paletteRequested(QPointF scenePos);
  // A right click without a drag (a right drag pans).
  void contextMenuRequested(QPoint viewPos);

 protected:
  void drawBackground(QPainter* painter, const QRectF& rect) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void keyReleaseEvent(QKeyEvent* event) override;
  bool focusNextPrevChild(bool next) override;

 private:
  QString emptyHint_;
  Minimap* minimap_;
  bool panning_ = false;
  bool spaceHeld_ = false;
  QPoint lastPanPos_;
  QPoint rightPressPos_;
  bool rightPress_ = false;  // a right press that has not moved (yet): a click opens the menu
};

}  // namespace vidgraph::gui
