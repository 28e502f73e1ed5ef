// DocumentController: the editor-only layout of nodes beyond their position (sizes); see
// document_controller.h. Layout lives in the file's "editor" object, which the engine never reads.
#include "gui/document_controller.h"

namespace vidgraph::gui {

std::optional<QSizeF> DocumentController::nodeSize(const std::string& id) const {
  const nlohmann::json layout = doc_.node_editor(id);
  if (!layout.is_object()) return std::nullopt;
  const auto it = layout.find("size");  // a file's editor state may hold anything
  if (it == layout.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number()) {
    return std::nullopt;
  }
  const QSizeF size((*it)[0].get<double>(), (*it)[1].get<double>());
  if (!(size.width() > 0 && size.height() > 0)) return std::nullopt;
  return size;
}

engine::Status DocumentController::resizeNode(const std::string& id, QSizeF size) {
  if (!doc_.find_node(id)) return engine::make_error("there is no node '" + id + "' to resize");
  if (!(size.width() > 0 && size.height() > 0)) return engine::make_error("a node's size must be positive");
  if (nodeSize(id) == size) return {};
  nlohmann::json layout = doc_.node_editor(id);
  if (!layout.is_object()) layout = nlohmann::json::object();
  layout["size"] = {size.width(), size.height()};
  // A composite of one, as moveNodes does: two separate resizes stay two undo steps.
  std::vector<engine::OperationPtr> parts;
  parts.push_back(engine::make_set_node_layout(id, std::move(layout)));
  return apply(engine::make_composite("Resize node '" + id + "'", std::move(parts)));
}

}  // namespace vidgraph::gui
