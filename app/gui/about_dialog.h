// The About dialog: the application's version and those of Qt, the engine, the node set and, when
// known, LibTorch and the loaded attention plugin.
#pragma once

#include <QtCore/QString>
#include <QtWidgets/QDialog>

namespace vidgraph::engine {
class Registry;
}  // namespace vidgraph::engine

namespace vidgraph::gui {

// Versions shown by the About dialog, one "name: version" line each (also used by --help). With a
// registry, also the attention methods the sampler offers (the loaded plugin's choices); with the
// session's plugin description (nodes::Session::attention_plugin_description), that line too.
QString versionReport(const engine::Registry* registry = nullptr, const QString& attentionPlugin = {});

class AboutDialog : public QDialog {
  Q_OBJECT

 public:
  AboutDialog(const engine::Registry* registry, const QString& attentionPlugin, QWidget* parent = nullptr);
};

}  // namespace vidgraph::gui
