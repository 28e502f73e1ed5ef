// LossChart: the live training curve. It plots the "loss" of every progress step that carries one
// (Train Wan's metrics) against the step, for the node that posts them, and says the latest step,
// loss and learning rate beneath. A run that starts over (a step at or below the last one, or
// another node) starts a new curve. Painted by hand: a polyline on a grid, no chart library.
#pragma once

#include <optional>

#include <QtCore/QPointF>
#include <QtCore/QString>
#include <QtCore/QVector>
#include <QtWidgets/QWidget>

namespace vidgraph::gui {

class LossChart : public QWidget {
  Q_OBJECT

 public:
  explicit LossChart(QWidget* parent = nullptr);

  // (step, loss) of the current curve, in order.
  const QVector<QPointF>& points() const { return points_; }
  // "step 40 of 200 · loss 0.1234 · lr 1.0e-04", or how to get a curve when there is none.
  QString summary() const;
  QSize sizeHint() const override { return {360, 180}; }

 public Q_SLOTS:
  // One progress step's numbers; steps without a "loss" are ignored.
  void addStep(const QString& nodeId, qint64 step, qint64 steps, const QVariantMap& metrics);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QVector<QPointF> points_;
  QString nodeId_;
  qint64 steps_ = 0;
  std::optional<double> lr_;
};

}  // namespace vidgraph::gui
