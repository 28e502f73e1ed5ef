// LossChart: the live training curves. It plots the losses a progress step carries against the step,
// for the node that posts them: Train Wan's "loss", Distill Wan's "generator_loss" and "critic_loss"
// (one colour each, one shared axis), and says the latest step, losses and learning rate beneath.
// A run that starts over (a step at or below the last one, or another node) starts new curves.
// Painted by hand: polylines on a grid, no chart library.
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

  // (step, value) of the current curve of `metric` ("loss", "generator_loss" or "critic_loss"), in
  // order; empty when the run posts none.
  QVector<QPointF> points(const QString& metric = QStringLiteral("loss")) const;
  // "step 40 of 200 · loss 0.1234 · lr 1.0e-04" (or "· generator … · critic …"), or how to get a
  // curve when there is none.
  QString summary() const;
  QSize sizeHint() const override { return {360, 180}; }

 public Q_SLOTS:
  // One progress step's numbers; steps without any of the losses are ignored.
  void addStep(const QString& nodeId, qint64 step, qint64 steps, const QVariantMap& metrics);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Curve {
    QString metric;
    QVector<QPointF> points;
  };
  QVector<Curve> curves_;  // in kMetrics order, only those the run posts
  QString nodeId_;
  qint64 steps_ = 0;
  std::optional<double> lr_;
};

}  // namespace vidgraph::gui
