// The application icon, painted with QPainter from the same design as resources/icons/io.vidgraph.Vidgraph.svg
// (three nodes linked into a play triangle on a rounded dark tile), so no SVG module is needed.
#pragma once

#include <QtGui/QIcon>
#include <QtGui/QImage>

namespace vidgraph::gui {

QImage paintAppIcon(int size);
QIcon appIcon();  // 16 … 256 px

}  // namespace vidgraph::gui
