// Build-time tool: writes the application icon as PNGs, <dir>/<N>x<N>/apps/vidgraph.png, for the
// desktop entry and packaging (the window icon itself is painted at run time).
#include <QtCore/QDir>
#include <QtCore/QTextStream>
#include <QtGui/QGuiApplication>

#include "gui/app_icon.h"

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  if (argc != 2) {
    QTextStream(stderr) << "usage: vidgraph_icon_tool OUTPUT_DIR\n";
    return 2;
  }
  for (int size : {16, 32, 48, 64, 128, 256}) {
    const QString dir = QStringLiteral("%1/%2x%2/apps").arg(QString::fromLocal8Bit(argv[1])).arg(size);
    if (!QDir().mkpath(dir) || !vidgraph::gui::paintAppIcon(size).save(dir + QStringLiteral("/vidgraph.png"), "PNG")) {
      QTextStream(stderr) << "cannot write the icon into " << dir << "; check that the folder is writable\n";
      return 1;
    }
  }
  return 0;
}
