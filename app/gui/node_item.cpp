// NodeItem (see node_item.h).
#include "gui/node_item.h"

#include <algorithm>

#include <QtGui/QPainter>
#include <QtGui/QPainterPath>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QGraphicsSceneHoverEvent>
#include <QtWidgets/QStyleOptionGraphicsItem>

#include "engine/node_type.h"
#include "gui/graph_scene.h"
#include "gui/port_style.h"

namespace vidgraph::gui {

namespace {

constexpr qreal kWidth = 210;
constexpr qreal kTitleHeight = 26;
constexpr qreal kRowHeight = 22;
constexpr qreal kStatusHeight = 20;
constexpr qreal kThumbHeight = 118;
constexpr qreal kSummaryRow = 15;
constexpr qreal kPortRadius = 5.5;
constexpr qreal kHitRadius = 11;
constexpr qreal kGrip = 12;

}  // namespace

NodeItem::NodeItem(std::string id, QString title, QString category, QString description,
                   std::vector<PortInfo> inputs, std::vector<PortInfo> outputs, bool unknownType)
    : id_(std::move(id)),
      title_(std::move(title)),
      category_(std::move(category)),
      description_(std::move(description)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      unknownType_(unknownType),
      width_(kWidth) {
  setFlags(ItemIsMovable | ItemIsSelectable | ItemSendsGeometryChanges);
  setAcceptHoverEvents(true);
  setCacheMode(DeviceCoordinateCache);
  setZValue(1);
  updateToolTip();
}

bool NodeItem::drawsTitleAt(qreal levelOfDetail) {
  return levelOfDetail >= kMinTitleLevelOfDetail;
}

qreal NodeItem::contentHeight() const {
  const auto rows = static_cast<qreal>(std::max<std::size_t>(std::max(inputs_.size(), outputs_.size()), 1));
  return kTitleHeight + rows * kRowHeight + 6 + summaryHeight() + (thumbnailSource_.isNull() ? 0 : kThumbHeight) +
         kStatusHeight;
}

qreal NodeItem::bodyHeight() const {
  if (collapsed_) return kTitleHeight;
  return std::max(contentHeight(), userHeight_);
}

qreal NodeItem::thumbnailHeight() const {
  return thumbnailSource_.isNull() ? 0 : kThumbHeight + std::max<qreal>(0, userHeight_ - contentHeight());
}

void NodeItem::setSize(const QSizeF& size) {
  const qreal width = size.isValid() ? std::max(kMinWidth, size.width()) : kWidth;
  const qreal height = size.isValid() ? std::max<qreal>(0, size.height()) : 0;
  if (width == width_ && height == userHeight_) return;
  prepareGeometryChange();
  width_ = width;
  userHeight_ = height;
  scaleThumbnail();
  if (auto* s = dynamic_cast<GraphScene*>(scene())) s->nodeGeometryChanged(this);
  update();
}

bool NodeItem::inResizeGrip(QPointF scenePos) const {
  if (collapsed_) return false;
  const QPointF p = mapFromScene(scenePos);
  return QRectF(width_ - kGrip, bodyHeight() - kGrip, kGrip + 2, kGrip + 2).contains(p);
}

void NodeItem::hoverMoveEvent(QGraphicsSceneHoverEvent* event) {
  if (inResizeGrip(event->scenePos())) setCursor(Qt::SizeFDiagCursor);
  else unsetCursor();
  QGraphicsItem::hoverMoveEvent(event);
}

qreal NodeItem::summaryHeight() const {
  return summary_.isEmpty() ? 0 : summary_.size() * kSummaryRow + 4;
}

QRectF NodeItem::boundingRect() const {
  return QRectF(-kPortRadius - 2, -2, width_ + 2 * kPortRadius + 4, bodyHeight() + 4);
}

QRectF NodeItem::portRect(int row, bool isOutput) const {
  const qreal y = collapsed_ ? kTitleHeight / 2 : kTitleHeight + 4 + row * kRowHeight + kRowHeight / 2;
  const qreal x = isOutput ? width_ : 0;
  return QRectF(x - kPortRadius, y - kPortRadius, 2 * kPortRadius, 2 * kPortRadius);
}

QPointF NodeItem::portScenePos(const QString& port, bool isOutput) const {
  const auto& list = isOutput ? outputs_ : inputs_;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i].name == port) return mapToScene(portRect(static_cast<int>(i), isOutput).center());
  }
  return mapToScene(QPointF(isOutput ? width_ : 0, kTitleHeight / 2));
}

std::optional<PortHit> NodeItem::portAt(QPointF scenePos) const {
  if (collapsed_) return std::nullopt;
  const QPointF p = mapFromScene(scenePos);
  for (int side = 0; side < 2; ++side) {
    const bool isOutput = side == 1;
    const auto& list = isOutput ? outputs_ : inputs_;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const QPointF c = portRect(static_cast<int>(i), isOutput).center();
      const QRectF row(isOutput ? width_ - 60 : 0, c.y() - kRowHeight / 2, 60, kRowHeight);
      if (QLineF(p, c).length() <= kHitRadius || row.contains(p)) {
        return PortHit{id_, list[i].name, list[i].type, isOutput};
      }
    }
  }
  return std::nullopt;
}

std::optional<PortInfo> NodeItem::findPort(const QString& port, bool isOutput) const {
  for (const auto& p : isOutput ? outputs_ : inputs_) {
    if (p.name == port) return p;
  }
  return std::nullopt;
}

void NodeItem::setStatus(const NodeStatus& status) {
  status_ = status;
  updateToolTip();
  update();
}

void NodeItem::setProblems(const QStringList& problems) {
  if (problems == problems_) return;
  problems_ = problems;
  updateToolTip();
  update();
}

void NodeItem::setSummary(const QStringList& lines) {
  if (lines == summary_) return;
  prepareGeometryChange();
  summary_ = lines;
  if (auto* s = dynamic_cast<GraphScene*>(scene())) s->nodeGeometryChanged(this);
  update();
}

void NodeItem::setThumbnail(const QImage& image) {
  prepareGeometryChange();
  thumbnailSource_ = image;
  scaleThumbnail();
  if (auto* s = dynamic_cast<GraphScene*>(scene())) s->nodeGeometryChanged(this);
  update();
}

void NodeItem::scaleThumbnail() {
  thumbnail_ = thumbnailSource_.isNull() ? QImage()
                                         : thumbnailSource_.scaled(int(width_ - 12), int(thumbnailHeight() - 8),
                                                                   Qt::KeepAspectRatio, Qt::SmoothTransformation);
}

void NodeItem::setHighlight(const QString& valueType, bool outputs) {
  if (highlightType_ == valueType && highlightOutputs_ == outputs) return;
  highlightType_ = valueType;
  highlightOutputs_ = outputs;
  update();
}

void NodeItem::updateToolTip() {
  QString tip = QStringLiteral("<b>%1</b> (%2)").arg(title_.toHtmlEscaped(), QString::fromStdString(id_));
  if (unknownType_) tip += QStringLiteral("<br>Unknown node type: kept and saved back unchanged, but it cannot run.");
  if (!description_.isEmpty()) tip += QStringLiteral("<br>") + description_.toHtmlEscaped();
  for (const QString& p : problems_) {
    tip += QStringLiteral("<br><span style='color:#ef5350'><b>Error:</b> %1</span>").arg(p.toHtmlEscaped());
  }
  if (status_.state == NodeRunState::Failed && !status_.message.isEmpty()) {
    tip += QStringLiteral("<br><span style='color:#ef5350'><b>Failed:</b> %1</span>").arg(status_.message.toHtmlEscaped());
  }
  setToolTip(tip);
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionHasChanged) {
    if (auto* s = dynamic_cast<GraphScene*>(scene())) s->nodeGeometryChanged(this);
  }
  return QGraphicsItem::itemChange(change, value);
}

void NodeItem::setCollapsed(bool collapsed) {
  if (collapsed_ == collapsed) return;
  prepareGeometryChange();
  collapsed_ = collapsed;
  if (auto* s = dynamic_cast<GraphScene*>(scene())) s->nodeGeometryChanged(this);
  update();
}

void NodeItem::setBypassed(bool bypassed) {
  if (bypassed_ == bypassed) return;
  bypassed_ = bypassed;
  setOpacity(bypassed ? 0.5 : 1.0);
  update();
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) {
  (void)widget;
  painter->setRenderHint(QPainter::Antialiasing);
  const qreal h = bodyHeight();
  const QRectF body(0, 0, width_, h);
  QPainterPath shape;
  shape.addRoundedRect(body, 7, 7);
  painter->fillPath(shape, QColor(0x2b, 0x2d, 0x33));

  // Title bar: the top strip of the rounded body.
  painter->save();
  painter->setClipPath(shape);
  painter->fillRect(QRectF(0, 0, width_, kTitleHeight), unknownType_ ? QColor(0x70, 0x40, 0x40) : categoryColor(category_));
  painter->restore();
  const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
  if (drawsTitleAt(lod)) {
    painter->save();
    painter->setPen(Qt::white);
    QFont f = painter->font();
    f.setBold(true);
    // Zoomed out, the title grows (up to the title bar's height) so it stays readable on screen.
    const qreal minScreenPx = 9;
    const qreal basePx = f.pixelSize() > 0 ? f.pixelSize() : QFontMetricsF(f).height() * 0.75;
    if (basePx * lod < minScreenPx) f.setPixelSize(int(std::min(minScreenPx / lod, kTitleHeight * 0.8)));
    painter->setFont(f);
    QString title = bypassed_ ? title_ + QStringLiteral(" · bypassed") : title_;
    if (collapsed_) title.prepend(QStringLiteral("▸ "));
    painter->drawText(QRectF(8, 0, width_ - 16, kTitleHeight), Qt::AlignVCenter | Qt::AlignLeft,
                      painter->fontMetrics().elidedText(title, Qt::ElideRight, int(width_ - 16)));
    painter->restore();
  }
  if (!collapsed_) paintBody(painter);

  // Outline: selection, failure, state.
  QPen pen(QColor(0x1a, 0x1a, 0x1e), 1.2);
  if (status_.state == NodeRunState::Failed || (!problems_.isEmpty() && status_.state == NodeRunState::Idle)) {
    pen = QPen(runStateColor(NodeRunState::Failed), 2.2);
  }
  else if (status_.state == NodeRunState::Running) pen = QPen(runStateColor(NodeRunState::Running), 2.0);
  if (isSelected()) pen = QPen(QColor(0xff, 0xc1, 0x07), 2.4);
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(shape);
}

void NodeItem::paintBody(QPainter* painter) const {
  paintPorts(painter);

  qreal y = kTitleHeight + std::max<std::size_t>(std::max(inputs_.size(), outputs_.size()), 1) * kRowHeight + 6;
  if (!summary_.isEmpty()) {
    painter->save();
    painter->setPen(QColor(0xa8, 0xab, 0xb3));
    QFont f = painter->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    painter->setFont(f);
    for (const QString& line : summary_) {
      painter->drawText(QRectF(10, y, width_ - 20, kSummaryRow), Qt::AlignVCenter | Qt::AlignLeft,
                        painter->fontMetrics().elidedText(line, Qt::ElideRight, int(width_ - 20)));
      y += kSummaryRow;
    }
    painter->restore();
    y += 4;
  }
  if (!thumbnail_.isNull()) {
    const QRectF area(6, y, width_ - 12, thumbnailHeight() - 6);
    const QPointF topLeft(area.center().x() - thumbnail_.width() / 2.0, area.center().y() - thumbnail_.height() / 2.0);
    painter->drawImage(topLeft, thumbnail_);
  }
  const qreal bottom = bodyHeight();
  paintStatus(painter, QRectF(0, bottom - kStatusHeight, width_, kStatusHeight));
  // The resize grip: two short diagonals in the bottom-right corner.
  painter->setPen(QPen(QColor(0x6a, 0x6d, 0x75), 1.2));
  for (qreal d : {4.0, 8.0}) painter->drawLine(QPointF(width_ - d - 2, bottom - 2), QPointF(width_ - 2, bottom - d - 2));
}

void NodeItem::paintPorts(QPainter* painter) const {
  for (int side = 0; side < 2; ++side) {
    const bool isOutput = side == 1;
    const auto& list = isOutput ? outputs_ : inputs_;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const QRectF r = portRect(static_cast<int>(i), isOutput);
      const bool lit = !highlightType_.isEmpty() && highlightOutputs_ == isOutput &&
                       engine::value_types_compatible(isOutput ? list[i].type.toStdString() : highlightType_.toStdString(),
                                                      isOutput ? highlightType_.toStdString() : list[i].type.toStdString());
      const QColor c = portTypeColor(list[i].type);
      painter->setPen(QPen(lit ? Qt::white : c.darker(160), lit ? 2.0 : 1.0));
      painter->setBrush(list[i].optional && !isOutput ? QBrush(c.darker(180)) : QBrush(c));
      painter->drawEllipse(lit ? r.adjusted(-2, -2, 2, 2) : r);
      painter->setPen(QColor(0xdd, 0xdd, 0xdd));
      const QRectF text(isOutput ? width_ / 2 : 12, r.center().y() - kRowHeight / 2, width_ / 2 - 12, kRowHeight);
      painter->drawText(text, Qt::AlignVCenter | (isOutput ? Qt::AlignRight : Qt::AlignLeft), list[i].name);
    }
  }
}

void NodeItem::paintStatus(QPainter* painter, const QRectF& area) const {
  const QColor c = runStateColor(status_.state);
  QString label = QString::fromLatin1(toString(status_.state));
  if (status_.state == NodeRunState::Running && status_.max > 0) {
    const QRectF bar = area.adjusted(8, 5, -8, -5);
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(0x1e, 0x1f, 0x23));
    painter->drawRoundedRect(bar, 3, 3);
    const double frac = std::clamp(double(status_.value) / double(status_.max), 0.0, 1.0);
    painter->setBrush(c);
    painter->drawRoundedRect(QRectF(bar.topLeft(), QSizeF(bar.width() * frac, bar.height())), 3, 3);
    label = QStringLiteral("%1/%2 %3").arg(status_.value).arg(status_.max).arg(status_.text);
  }
  if (status_.state == NodeRunState::Idle && !problems_.isEmpty()) {
    label = QStringLiteral("error: ") + problems_.front() +
            (problems_.size() > 1 ? QStringLiteral(" (+%1 more)").arg(problems_.size() - 1) : QString());
    painter->setPen(runStateColor(NodeRunState::Failed).lighter(130));
    painter->drawText(area.adjusted(10, 0, -10, 0), Qt::AlignVCenter | Qt::AlignLeft,
                      painter->fontMetrics().elidedText(label, Qt::ElideRight, int(area.width() - 20)));
    return;
  }
  if (status_.state == NodeRunState::Idle) return;
  painter->setPen(status_.state == NodeRunState::Running ? Qt::white : c.lighter(130));
  QFont f = painter->font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  painter->setFont(f);
  QString shown = label;
  if (status_.state == NodeRunState::Failed && !status_.message.isEmpty()) shown = QStringLiteral("failed: ") + status_.message;
  painter->drawText(area.adjusted(10, 0, -10, 0), Qt::AlignVCenter | Qt::AlignLeft,
                    painter->fontMetrics().elidedText(shown, Qt::ElideRight, int(area.width() - 20)));
}

}  // namespace vidgraph::gui
