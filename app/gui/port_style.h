// Colours of the editor: one per port value type (fixed for the built-in types, a stable hash hue
// for any other), one per node run state, one per node category.
#pragma once

#include <QtGui/QColor>
#include <QtCore/QString>

#include "gui/run_controller.h"

namespace vidgraph::gui {

QColor portTypeColor(const QString& valueType);
QColor runStateColor(NodeRunState state);
QColor categoryColor(const QString& category);

}  // namespace vidgraph::gui
