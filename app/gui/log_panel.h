// LogPanel: the run log (engine events and every layer's log lines), newest at the bottom, errors
// in red, warnings in amber, capped at a few thousand lines.
#pragma once

#include <QtWidgets/QPlainTextEdit>

namespace vidgraph::gui {

class LogPanel : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit LogPanel(QWidget* parent = nullptr);

 public Q_SLOTS:
  void appendLine(const QString& level, const QString& source, const QString& text);
};

}  // namespace vidgraph::gui
