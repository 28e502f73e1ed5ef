// Copy/paste payload (see clipboard_json.h).
#include "gui/clipboard_json.h"

#include <set>

#include "engine/workflow_file.h"

namespace vidgraph::gui {

namespace {

constexpr const char* kReroutes = "reroutes";
constexpr const char* kGroups = "groups";

// The node an editor entry's "to" or "from" names ("" when it has none).
std::string entry_node(const nlohmann::json& entry, const char* end) {
  if (!entry.is_object()) return {};
  const auto it = entry.find(end);
  return it != entry.end() && it->is_object() ? it->value("node", std::string()) : std::string();
}

// [x, y] pairs and [x, y, w, h] rects: every leading coordinate pair moved by (dx, dy).
nlohmann::json moved(nlohmann::json xy, double dx, double dy) {
  if (xy.is_array() && xy.size() >= 2 && xy[0].is_number() && xy[1].is_number()) {
    xy[0] = xy[0].get<double>() + dx;
    xy[1] = xy[1].get<double>() + dy;
  }
  return xy;
}

// `doc`'s editor list `key` with `added` appended, as one edit; null when nothing is added or the
// document's entry is not a list.
engine::OperationPtr appended(const engine::GraphDocument& doc, const char* key, const nlohmann::json& added) {
  if (added.empty()) return nullptr;
  nlohmann::json list = doc.editor().contains(key) ? doc.editor()[key] : nlohmann::json::array();
  if (!list.is_array()) return nullptr;
  for (const auto& e : added) list.push_back(e);
  return engine::make_set_editor_entry(key, std::move(list));
}

}  // namespace

QString nodesToWorkflowJson(const engine::GraphDocument& doc, const std::vector<std::string>& ids,
                            const std::vector<int>& groups) {
  const std::set<std::string> selected(ids.begin(), ids.end());
  std::vector<engine::Node> nodes;
  nlohmann::json layouts = nlohmann::json::object();
  for (const engine::Node& n : doc.nodes()) {  // document order, so the paste keeps it
    if (!selected.count(n.id)) continue;
    engine::Node copy = n;
    for (auto it = copy.inputs.begin(); it != copy.inputs.end();) {
      it = selected.count(it->second.node) ? std::next(it) : copy.inputs.erase(it);
    }
    nodes.push_back(std::move(copy));
    nlohmann::json layout = doc.node_editor(n.id);
    if (!layout.is_null()) layouts[n.id] = layout;
  }
  nlohmann::json editor{{"nodes", layouts}};
  const nlohmann::json& source = doc.editor();
  if (source.contains(kReroutes) && source[kReroutes].is_array()) {
    nlohmann::json reroutes = nlohmann::json::array();
    for (const auto& e : source[kReroutes]) {
      if (selected.count(entry_node(e, "to")) && selected.count(entry_node(e, "from"))) reroutes.push_back(e);
    }
    if (!reroutes.empty()) editor[kReroutes] = std::move(reroutes);
  }
  if (!groups.empty() && source.contains(kGroups) && source[kGroups].is_array()) {
    nlohmann::json copied = nlohmann::json::array();
    for (int i : groups) {
      if (i >= 0 && i < int(source[kGroups].size())) copied.push_back(source[kGroups][std::size_t(i)]);
    }
    if (!copied.empty()) editor[kGroups] = std::move(copied);
  }
  auto sub = engine::GraphDocument::build(std::move(nodes), std::move(editor));
  if (!sub.ok()) return {};  // cannot happen: a subset of a valid document without outside links
  return QString::fromStdString(engine::save_workflow_string(sub.value()));
}

engine::Result<ClipboardNodes> parseWorkflowJson(const QString& text) {
  const QByteArray utf8 = text.toUtf8();
  auto loaded = engine::load_workflow_string(std::string_view(utf8.constData(), utf8.size()), {}, "<clipboard>");
  if (!loaded.ok()) return loaded.error();
  ClipboardNodes out;
  out.nodes = loaded->document.nodes();
  const nlohmann::json& editor = loaded->document.editor();
  if (editor.contains("nodes") && editor["nodes"].is_object()) out.layouts = editor["nodes"];
  if (editor.contains(kReroutes) && editor[kReroutes].is_array()) out.reroutes = editor[kReroutes];
  if (editor.contains(kGroups) && editor[kGroups].is_array()) out.groups = editor[kGroups];
  return out;
}

std::vector<engine::OperationPtr> pasteEditorEntries(const engine::GraphDocument& doc, const ClipboardNodes& clip,
                                                     const std::map<std::string, std::string>& ids, double dx,
                                                     double dy) {
  nlohmann::json reroutes = nlohmann::json::array();
  for (nlohmann::json e : clip.reroutes) {
    const auto to = ids.find(entry_node(e, "to")), from = ids.find(entry_node(e, "from"));
    if (to == ids.end() || from == ids.end() || !e.contains("points") || !e["points"].is_array()) continue;
    e["to"]["node"] = to->second;
    e["from"]["node"] = from->second;
    for (auto& p : e["points"]) p = moved(p, dx, dy);
    reroutes.push_back(std::move(e));
  }
  nlohmann::json groups = nlohmann::json::array();
  for (nlohmann::json g : clip.groups) {
    if (!g.is_object() || !g.contains("rect")) continue;
    g["rect"] = moved(g["rect"], dx, dy);
    groups.push_back(std::move(g));
  }
  std::vector<engine::OperationPtr> ops;
  if (auto op = appended(doc, kReroutes, reroutes)) ops.push_back(std::move(op));
  if (auto op = appended(doc, kGroups, groups)) ops.push_back(std::move(op));
  return ops;
}

}  // namespace vidgraph::gui
