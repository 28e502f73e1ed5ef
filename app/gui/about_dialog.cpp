// About dialog (see about_dialog.h). LibTorch, FFmpeg and GPU-kernel versions come from
// nodes::build_versions() (strings only, no ATen); the attention plugin's from the session that
// loaded it, and the methods the sampler offers from the registry.
#include "gui/about_dialog.h"

#include <QtCore/QLibraryInfo>
#include <QtCore/QStringList>
#include <QtWidgets/QDialogButtonBox>
#include <QtWidgets/QLabel>
#include <QtWidgets/QVBoxLayout>

#include "engine/registry.h"
#include "engine/workflow_file.h"
#include "gui/app_icon.h"

#ifdef VIDGRAPH_GUI_HAVE_NODES
#include "nodes/build_info.h"
#include "nodes/register_nodes.h"
#endif  // VIDGRAPH_GUI_HAVE_NODES

namespace vidgraph::gui {

QString versionReport(const engine::Registry* registry, const QString& attentionPlugin) {
  QStringList lines;
  lines << QStringLiteral("Vidgraph: %1").arg(QStringLiteral(VIDGRAPH_VERSION));
  lines << QStringLiteral("Qt: %1 (built with %2)").arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR));
  lines << QStringLiteral("Workflow format: version %1").arg(engine::kWorkflowFormatVersion);
#ifdef VIDGRAPH_GUI_HAVE_NODES
  lines << QStringLiteral("Built-in nodes: %1 types").arg(nodes::builtin_node_names().size());
  for (const auto& [component, version] : nodes::build_versions()) {
    if (component != "Vidgraph") lines << QString::fromStdString(component + ": " + version);
  }
#else
  lines << QStringLiteral("Built-in nodes: not in this build (no LibTorch linked)");
#endif  // VIDGRAPH_GUI_HAVE_NODES
  if (!attentionPlugin.isEmpty()) lines << QStringLiteral("Attention plugin: %1").arg(attentionPlugin);
  if (registry) {
    for (const engine::NodeType* t : registry->list()) {
      const engine::ParamSpec* attention = t->find_param("attention");
      if (!attention || attention->kind != engine::ParamKind::Enum) continue;
      QStringList methods;
      for (const auto& c : attention->choices) methods << QString::fromStdString(c);
      lines << QStringLiteral("Attention methods (%1): %2").arg(QString::fromStdString(t->name), methods.join(QStringLiteral(", ")));
    }
  }
  return lines.join(QLatin1Char('\n'));
}

AboutDialog::AboutDialog(const engine::Registry* registry, const QString& attentionPlugin, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("About Vidgraph"));
  auto* layout = new QVBoxLayout(this);
  auto* icon = new QLabel(this);
  icon->setPixmap(QPixmap::fromImage(paintAppIcon(96)));
  icon->setAlignment(Qt::AlignCenter);
  layout->addWidget(icon);
  auto* title = new QLabel(tr("<h2>Vidgraph</h2><p>Node-graph video generation with Wan2.2 and sparse attention.</p>"), this);
  title->setAlignment(Qt::AlignCenter);
  layout->addWidget(title);
  auto* versions = new QLabel(versionReport(registry, attentionPlugin).toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")), this);
  versions->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(versions);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
}

}  // namespace vidgraph::gui
