// The editor's theme: a dark Fusion palette, unless the platform already uses a dark palette (then
// it is respected as is) or VIDGRAPH_THEME=system asks for the platform's own look.
#pragma once

class QApplication;

namespace vidgraph::gui {

void applyTheme(QApplication& app);

}  // namespace vidgraph::gui
