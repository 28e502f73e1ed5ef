// The About dialog: the application's version and those of Qt, the engine, the node set and, when
// known, LibTorch and the loaded attention plugin.
#pragma once

#include <QtCore/QString>
#include <QtWidgets/QDialog>

namespace vidgraph::gui {

// Versions shown by the About dialog, one "name: version" line each (also used by --version).
QString versionReport();

class AboutDialog : public QDialog {
  Q_OBJECT

 public:
  explicit AboutDialog(QWidget* parent = nullptr);
};

}  // namespace vidgraph::gui
