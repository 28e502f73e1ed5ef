// DocumentController: the editor-only layout beyond node positions (node sizes, groups); see
// document_controller.h. Layout lives in the file's "editor" object, which the engine never reads.
#include <functional>

#include "gui/document_controller.h"

namespace vidgraph::gui {

namespace {

constexpr const char* kGroups = "groups";

std::optional<QRectF> rectOf(const nlohmann::json& r) {
  if (!r.is_array() || r.size() != 4) return std::nullopt;
  for (const auto& v : r) {
    if (!v.is_number()) return std::nullopt;
  }
  const QRectF rect(r[0].get<double>(), r[1].get<double>(), r[2].get<double>(), r[3].get<double>());
  if (!(rect.width() > 0 && rect.height() > 0)) return std::nullopt;
  return rect;
}

nlohmann::json toJson(const QRectF& r) { return {r.x(), r.y(), r.width(), r.height()}; }

}  // namespace

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

std::vector<NodeGroup> DocumentController::groups() const {
  std::vector<NodeGroup> out;
  const auto it = doc_.editor().find(kGroups);
  if (it == doc_.editor().end() || !it->is_array()) return out;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& g = (*it)[i];
    if (!g.is_object()) continue;
    const auto rect = g.contains("rect") ? rectOf(g["rect"]) : std::nullopt;
    if (!rect) continue;
    const auto title = g.find("title");
    out.push_back(NodeGroup{int(i), title != g.end() && title->is_string() ? QString::fromStdString(title->get<std::string>()) : QString(),
                            *rect});
  }
  return out;
}

namespace {

// The file's group list with entry `index` changed by `edit` (null = removed), as an operation.
engine::Result<engine::OperationPtr> editGroups(const engine::GraphDocument& doc, int index,
                                                const std::function<nlohmann::json(nlohmann::json)>& edit) {
  nlohmann::json list = doc.editor().contains(kGroups) ? doc.editor()[kGroups] : nlohmann::json();
  if (!list.is_array() || index < 0 || index >= int(list.size())) {
    return engine::make_error("there is no group " + std::to_string(index) + " in this workflow");
  }
  nlohmann::json entry = edit(list[index]);
  if (entry.is_null()) list.erase(list.begin() + index);
  else list[index] = std::move(entry);
  return engine::make_set_editor_entry(kGroups, list.empty() ? nlohmann::json(nullptr) : std::move(list));
}

}  // namespace

engine::Status DocumentController::addGroup(const QString& title, const QRectF& rect) {
  if (!(rect.width() > 0 && rect.height() > 0)) return engine::make_error("a group needs a rectangle with an area");
  nlohmann::json list = doc_.editor().contains(kGroups) ? doc_.editor()[kGroups] : nlohmann::json::array();
  if (!list.is_array()) {
    return engine::make_error("this workflow's editor \"groups\" entry is not a list; it is kept as it is");
  }
  list.push_back(nlohmann::json{{"title", title.toStdString()}, {"rect", toJson(rect)}});
  return apply(engine::make_set_editor_entry(kGroups, std::move(list)));
}

engine::Status DocumentController::renameGroup(int index, const QString& title) {
  auto op = editGroups(doc_, index, [&](nlohmann::json g) {
    g["title"] = title.toStdString();
    return g;
  });
  if (!op.ok()) return op.error();
  return apply(std::move(op.value()));
}

engine::Status DocumentController::removeGroup(int index) {
  auto op = editGroups(doc_, index, [](nlohmann::json) { return nlohmann::json(nullptr); });
  if (!op.ok()) return op.error();
  return apply(std::move(op.value()));
}

engine::Status DocumentController::moveGroup(int index, QPointF delta, const std::map<std::string, QPointF>& members) {
  auto op = editGroups(doc_, index, [&](nlohmann::json g) {
    if (auto rect = rectOf(g.value("rect", nlohmann::json())); rect) g["rect"] = toJson(rect->translated(delta));
    return g;
  });
  if (!op.ok()) return op.error();
  std::vector<engine::OperationPtr> parts;
  parts.push_back(std::move(op.value()));
  for (const auto& [id, p] : members) parts.push_back(engine::make_move_node(id, p.x(), p.y()));
  return apply(engine::make_composite("Move group", std::move(parts)));
}

}  // namespace vidgraph::gui
