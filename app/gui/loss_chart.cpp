#include "gui/loss_chart.h"

#include <algorithm>

#include <QtCore/QVariantMap>
#include <QtGui/QPainter>
#include <QtGui/QPainterPath>

namespace vidgraph::gui {

LossChart::LossChart(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
  setToolTip(tr("Training loss per step of the running Train Wan node"));
}

void LossChart::addStep(const QString& nodeId, qint64 step, qint64 steps, const QVariantMap& metrics) {
  const auto loss = metrics.find(QStringLiteral("loss"));
  if (loss == metrics.end()) return;
  if (nodeId != nodeId_ || (!points_.isEmpty() && step <= points_.back().x())) points_.clear();
  nodeId_ = nodeId;
  steps_ = steps;
  points_.append(QPointF(double(step), loss->toDouble()));
  const auto lr = metrics.find(QStringLiteral("lr"));
  lr_ = lr != metrics.end() ? std::optional<double>(lr->toDouble()) : std::nullopt;
  update();
}

QString LossChart::summary() const {
  if (points_.isEmpty()) return tr("Run a workflow with Train Wan to see its loss here.");
  const QPointF& last = points_.back();
  QString text = tr("%1: step %2 of %3 · loss %4").arg(nodeId_).arg(qint64(last.x())).arg(steps_).arg(last.y(), 0, 'f', 4);
  if (lr_) text += tr(" · lr %1").arg(*lr_, 0, 'e', 1);
  return text;
}

void LossChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette& pal = palette();
  p.fillRect(rect(), pal.color(QPalette::Base));
  const int line = fontMetrics().height();
  const QRectF plot = QRectF(rect()).adjusted(8, 8, -8, -(line + 12));
  p.setPen(pal.color(QPalette::Text));
  p.drawText(QRectF(8, height() - line - 6, width() - 16, line), Qt::AlignLeft | Qt::AlignVCenter, summary());
  if (points_.isEmpty() || plot.width() < 10 || plot.height() < 10) return;
  double lo = points_.front().y(), hi = lo;
  for (const QPointF& pt : points_) lo = std::min(lo, pt.y()), hi = std::max(hi, pt.y());
  if (hi - lo < 1e-12) hi = lo + 1.0;
  const double first = points_.front().x(), last = std::max<double>(double(steps_), points_.back().x());
  const double span = std::max(1.0, last - first);
  auto at = [&](const QPointF& pt) {
    return QPointF(plot.left() + (pt.x() - first) / span * plot.width(),
                   plot.bottom() - (pt.y() - lo) / (hi - lo) * plot.height());
  };
  p.setPen(QPen(pal.color(QPalette::Mid), 1, Qt::DotLine));
  for (int i = 0; i <= 4; ++i) p.drawLine(QPointF(plot.left(), plot.top() + plot.height() * i / 4),
                                          QPointF(plot.right(), plot.top() + plot.height() * i / 4));
  p.setPen(pal.color(QPalette::PlaceholderText));
  p.drawText(plot, Qt::AlignTop | Qt::AlignRight, QString::number(hi, 'g', 3));
  p.drawText(plot, Qt::AlignBottom | Qt::AlignRight, QString::number(lo, 'g', 3));
  QPainterPath path(at(points_.front()));
  for (const QPointF& pt : points_) path.lineTo(at(pt));
  p.setPen(QPen(pal.color(QPalette::Highlight), 1.5));
  p.drawPath(path);
}

}  // namespace vidgraph::gui
