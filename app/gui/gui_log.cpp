// The "gui" logger (see gui_log.h).
#include "gui/gui_log.h"

#include "engine/log.h"

namespace vidgraph::gui {

std::shared_ptr<spdlog::logger> guiLogger() {
  return engine::layer_logger("gui");
}

}  // namespace vidgraph::gui
