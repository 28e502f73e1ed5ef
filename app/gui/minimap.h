// Minimap: an overview of the whole graph in the canvas's bottom-right corner: every node (and
// group) as a small rectangle, the part the view shows as a frame. A click or drag in it centres
// the view there.
//
// Contract: a child of its GraphView (not of the viewport, which scrolls its children), opaque (so
// repainting it never repaints the canvas under it); it keeps itself in the corner and repaints
// when the scene changes or the view moves (GraphView::drawForeground tells it).
#pragma once

#include <QtCore/QRectF>
#include <QtWidgets/QWidget>

namespace vidgraph::gui {

class GraphView;

class Minimap : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kWidth = 200;
  static constexpr int kHeight = 130;

  explicit Minimap(GraphView* view);

  // The scene area drawn (the nodes, groups and the visible part, with a margin) and the mapping
  // from scene to minimap pixels.
  QRectF world() const;
  QPointF toMinimap(QPointF scenePos) const;
  QPointF toScene(QPointF minimapPos) const;
  // Called when the visible area may have moved; repaints when it did.
  void viewMoved();
  void placeInCorner();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  QRectF visibleSceneRect() const;

  GraphView* view_;
  QRectF lastVisible_;
};

}  // namespace vidgraph::gui
