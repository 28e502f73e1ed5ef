// LogPanel (see log_panel.h).
#include "gui/log_panel.h"

#include <QtCore/QTime>

namespace vidgraph::gui {

LogPanel::LogPanel(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setMaximumBlockCount(5000);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  QFont f = font();
  f.setFamily(QStringLiteral("monospace"));
  f.setStyleHint(QFont::Monospace);
  setFont(f);
}

void LogPanel::appendLine(const QString& level, const QString& source, const QString& text) {
  QString color = QStringLiteral("#c8c8cc");
  if (level == QLatin1String("error") || level == QLatin1String("critical")) color = QStringLiteral("#ef5350");
  else if (level == QLatin1String("warning") || level == QLatin1String("warn")) color = QStringLiteral("#ffb74d");
  else if (level == QLatin1String("debug") || level == QLatin1String("trace")) color = QStringLiteral("#808088");
  appendHtml(QStringLiteral("<span style='color:#707078'>%1</span> <span style='color:%2'>[%3] %4</span>")
                 .arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), color, source.toHtmlEscaped(),
                      text.toHtmlEscaped()));
}

}  // namespace vidgraph::gui
