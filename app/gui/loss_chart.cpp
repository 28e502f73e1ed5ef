#include "gui/loss_chart.h"

#include <algorithm>

#include <QtCore/QVariantMap>
#include <QtGui/QPainter>
#include <QtGui/QPainterPath>

namespace vidgraph::gui {

namespace {

// The loss metrics the chart draws, in drawing order, with the word the summary uses.
struct LossMetric {
  const char* key;
  const char* label;
};
constexpr LossMetric kMetrics[] = {{"loss", "loss"}, {"generator_loss", "generator"}, {"critic_loss", "critic"}};

}  // namespace

LossChart::LossChart(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 120);
  setToolTip(tr("Training losses per step of the running Train Wan or Distill Wan node"));
}

QVector<QPointF> LossChart::points(const QString& metric) const {
  for (const Curve& c : curves_)
    if (c.metric == metric) return c.points;
  return {};
}

void LossChart::addStep(const QString& nodeId, qint64 step, qint64 steps, const QVariantMap& metrics) {
  const bool any = std::any_of(std::begin(kMetrics), std::end(kMetrics),
                               [&](const LossMetric& m) { return metrics.contains(QLatin1String(m.key)); });
  if (!any) return;
  const bool restart = nodeId != nodeId_ || (!curves_.isEmpty() && !curves_.front().points.isEmpty() &&
                                             step <= curves_.front().points.back().x());
  if (restart) curves_.clear();
  nodeId_ = nodeId;
  steps_ = steps;
  for (const LossMetric& m : kMetrics) {
    const auto value = metrics.find(QLatin1String(m.key));
    if (value == metrics.end()) continue;
    auto curve = std::find_if(curves_.begin(), curves_.end(), [&](const Curve& c) { return c.metric == QLatin1String(m.key); });
    if (curve == curves_.end()) curve = curves_.insert(curves_.end(), Curve{QLatin1String(m.key), {}});
    curve->points.append(QPointF(double(step), value->toDouble()));
  }
  const auto lr = metrics.find(QStringLiteral("lr"));
  lr_ = lr != metrics.end() ? std::optional<double>(lr->toDouble()) : std::nullopt;
  update();
}

QString LossChart::summary() const {
  if (curves_.isEmpty()) return tr("Run a workflow with Train Wan or Distill Wan to see its losses here.");
  QString text = tr("%1: step %2 of %3").arg(nodeId_).arg(qint64(curves_.front().points.back().x())).arg(steps_);
  for (const Curve& c : curves_) {
    const auto m = std::find_if(std::begin(kMetrics), std::end(kMetrics),
                                [&](const LossMetric& k) { return c.metric == QLatin1String(k.key); });
    text += tr(" · %1 %2").arg(QLatin1String(m->label)).arg(c.points.back().y(), 0, 'f', 4);
  }
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
  if (curves_.isEmpty() || plot.width() < 10 || plot.height() < 10) return;
  double lo = curves_.front().points.front().y(), hi = lo, first = curves_.front().points.front().x(), last = first;
  for (const Curve& c : curves_) {
    for (const QPointF& pt : c.points) {
      lo = std::min(lo, pt.y()), hi = std::max(hi, pt.y());
      first = std::min(first, pt.x()), last = std::max(last, pt.x());
    }
  }
  if (hi - lo < 1e-12) hi = lo + 1.0;
  last = std::max<double>(double(steps_), last);
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
  // The first curve in the highlight colour, the second (the critic's) in the link colour.
  const QColor colours[] = {pal.color(QPalette::Highlight), pal.color(QPalette::Link), pal.color(QPalette::Mid)};
  for (int i = 0; i < curves_.size(); ++i) {
    const QVector<QPointF>& pts = curves_[i].points;
    QPainterPath path(at(pts.front()));
    for (const QPointF& pt : pts) path.lineTo(at(pt));
    p.setPen(QPen(colours[std::min(i, 2)], 1.5));
    p.drawPath(path);
  }
}

}  // namespace vidgraph::gui
