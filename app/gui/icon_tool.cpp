// Maintainer tool: writes the application icon as PNGs, <dir>/io.vidgraph.Vidgraph-<N>.png, the
// sizes packaging installs (the window icon itself is painted at run time).
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
  const QString dir = QString::fromLocal8Bit(argv[1]);
  for (int size : {48, 128, 256}) {
    const QString file = QStringLiteral("%1/io.vidgraph.Vidgraph-%2.png").arg(dir).arg(size);
    if (!QDir().mkpath(dir) || !vidgraph::gui::paintAppIcon(size).save(file, "PNG")) {
      QTextStream(stderr) << "cannot write " << file << "; check that the folder is writable\n";
      return 1;
    }
  }
  return 0;
}
