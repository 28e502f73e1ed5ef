// vidgraph: the desktop node editor. Registers the node types, applies the theme, opens the files
// given on the command line (or offers to restore autosaved work), and runs the Qt event loop.
#include <memory>

#include <QtCore/QCommandLineParser>
#include <QtWidgets/QApplication>

#include <spdlog/spdlog.h>

#include "engine/registry.h"
#include "gui/about_dialog.h"
#include "gui/app_icon.h"
#include "gui/log_sink.h"
#include "gui/main_window.h"
#include "gui/theme.h"

#ifdef VIDGRAPH_GUI_HAVE_NODES
#include "nodes/register_nodes.h"
#endif  // VIDGRAPH_GUI_HAVE_NODES

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Vidgraph"));
  QApplication::setApplicationName(QStringLiteral("vidgraph"));
  QApplication::setApplicationVersion(QStringLiteral(VIDGRAPH_VERSION));
  QApplication::setWindowIcon(vidgraph::gui::appIcon());

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Vidgraph node editor.\n\n") + vidgraph::gui::versionReport());
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("workflow"), QStringLiteral("A .vgflow file to open."));
  parser.process(app);

  auto sink = std::make_shared<vidgraph::gui::LogSink>();
  spdlog::default_logger()->sinks().push_back(sink);

  vidgraph::engine::Registry registry;
#ifdef VIDGRAPH_GUI_HAVE_NODES
  vidgraph::nodes::register_builtin_nodes(registry);
#endif  // VIDGRAPH_GUI_HAVE_NODES

  vidgraph::gui::applyTheme(app);
  int rc = 0;
  {
    vidgraph::gui::MainWindow window(registry);
    window.attachLogSink(sink);
    window.show();
    window.startUp(parser.positionalArguments());
    rc = app.exec();
  }
  sink->setReceiver({});
  return rc;
}
