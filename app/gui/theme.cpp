// Dark theme (see theme.h).
#include "gui/theme.h"

#include <QtGui/QPalette>
#include <QtWidgets/QApplication>
#include <QtWidgets/QStyleFactory>

namespace vidgraph::gui {

void applyTheme(QApplication& app) {
  if (qEnvironmentVariable("VIDGRAPH_THEME") == QLatin1String("system")) return;
  const QPalette current = app.palette();
  if (current.color(QPalette::Window).lightness() < 100) return;  // the platform is dark already
  app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette p;
  const QColor window(0x25, 0x26, 0x2b), base(0x1c, 0x1d, 0x21), text(0xe0, 0xe0, 0xe4), accent(0x42, 0xa5, 0xf5);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, QColor(0x30, 0x31, 0x38));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x80, 0x80, 0x88));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x2f, 0x30, 0x36));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::black);
  p.setColor(QPalette::Link, accent);
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x70, 0x70, 0x78));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x70, 0x70, 0x78));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x70, 0x70, 0x78));
  app.setPalette(p);
}

}  // namespace vidgraph::gui
