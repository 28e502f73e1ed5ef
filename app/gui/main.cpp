// vidgraph: the desktop node editor. Opens the session (the attention plugin and the node types, as
// vidgraph-run builds it), applies the theme, opens the files given on the command line (or offers
// to restore autosaved work), and runs the Qt event loop.
#include <memory>
#include <utility>

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
#include "engine/environment.h"
#include "nodes/session.h"
#endif  // VIDGRAPH_GUI_HAVE_NODES

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("Vidgraph"));
  QApplication::setApplicationName(QStringLiteral("vidgraph"));
  QApplication::setApplicationVersion(QStringLiteral(VIDGRAPH_VERSION));
  QApplication::setWindowIcon(vidgraph::gui::appIcon());

  // Before the session: each layer's logger copies the default logger's sinks when first used.
  auto sink = std::make_shared<vidgraph::gui::LogSink>();
  spdlog::default_logger()->sinks().push_back(sink);

  vidgraph::gui::MainWindowOptions options;
#ifdef VIDGRAPH_GUI_HAVE_NODES
  // Outlives the window: its node types and plugin serve every run the window starts.
  const vidgraph::engine::Environment environment = vidgraph::engine::read_environment();
  vidgraph::nodes::SessionSettings settings;
  settings.plugin_path = environment.plugin_path;
  settings.model_paths_file = environment.model_paths_file;
  vidgraph::nodes::Session session(std::move(settings));
  const vidgraph::engine::Registry& registry = session.registry();
  options.attentionPlugin = QString::fromStdString(session.attention_plugin_description());
  options.engine = session.engine_config();
  options.runDefaults = session.run_options();
#else
  vidgraph::engine::Registry registry;
#endif  // VIDGRAPH_GUI_HAVE_NODES

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Vidgraph node editor.\n\n") +
                                   vidgraph::gui::versionReport(&registry, options.attentionPlugin));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("workflow"), QStringLiteral("A .vgflow file to open."));
  parser.process(app);

  vidgraph::gui::applyTheme(app);
  int rc = 0;
  {
    vidgraph::gui::MainWindow window(registry, options);
    window.attachLogSink(sink);
    window.show();
    window.startUp(parser.positionalArguments());
    rc = app.exec();
  }
  sink->setReceiver({});
  return rc;
}
