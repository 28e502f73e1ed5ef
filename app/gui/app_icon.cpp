// Application icon (see app_icon.h). Design in a 256-unit box, matching vidgraph.svg.
#include "gui/app_icon.h"

#include <QtGui/QLinearGradient>
#include <QtGui/QPainter>
#include <QtGui/QPainterPath>

namespace vidgraph::gui {

QImage paintAppIcon(int size) {
  QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing);
  p.scale(size / 256.0, size / 256.0);
  QLinearGradient bg(0, 0, 0, 256);
  bg.setColorAt(0, QColor(0x2d, 0x31, 0x3a));
  bg.setColorAt(1, QColor(0x16, 0x18, 0x1d));
  QPainterPath tile;
  tile.addRoundedRect(QRectF(8, 8, 240, 240), 48, 48);
  p.fillPath(tile, bg);
  // Play triangle, the video.
  QPainterPath play;
  play.moveTo(92, 70);
  play.lineTo(196, 128);
  play.lineTo(92, 186);
  play.closeSubpath();
  p.fillPath(play, QColor(0x42, 0xa5, 0xf5, 70));
  // Wires along the triangle's edges, the graph.
  p.setPen(QPen(QColor(0xba, 0x68, 0xc8), 12, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(92, 70), QPointF(196, 128));
  p.setPen(QPen(QColor(0x64, 0xb5, 0xf6), 12, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(196, 128), QPointF(92, 186));
  p.setPen(QPen(QColor(0xff, 0xb7, 0x4d), 12, Qt::SolidLine, Qt::RoundCap));
  p.drawLine(QPointF(92, 186), QPointF(92, 70));
  // Nodes at the corners.
  p.setPen(QPen(QColor(0x16, 0x18, 0x1d), 6));
  p.setBrush(QColor(0xff, 0xd5, 0x4f));
  p.drawEllipse(QPointF(92, 70), 24, 24);
  p.setBrush(QColor(0x66, 0xbb, 0x6a));
  p.drawEllipse(QPointF(196, 128), 24, 24);
  p.setBrush(QColor(0xef, 0x53, 0x50));
  p.drawEllipse(QPointF(92, 186), 24, 24);
  return image;
}

QIcon appIcon() {
  QIcon icon;
  for (int s : {16, 24, 32, 48, 64, 128, 256}) icon.addPixmap(QPixmap::fromImage(paintAppIcon(s)));
  return icon;
}

}  // namespace vidgraph::gui
