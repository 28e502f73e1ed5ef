// Colours of the editor: one per port value type (fixed for the built-in types, a stable hash hue
// for any other), one per node run state, one per node category. Hashed hues use FNV-1a of the name,
// so a type or category has the same colour on every launch.
#pragma once

#include <QtGui/QColor>
#include <QtCore/QString>

#include "gui/run_controller.h"

namespace vidgraph::gui {

QColor portTypeColor(const QString& valueType);
QColor runStateColor(NodeRunState state);
QColor categoryColor(const QString& category);

}  // namespace vidgraph::gui
