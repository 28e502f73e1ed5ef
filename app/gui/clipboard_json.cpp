// Copy/paste payload (see clipboard_json.h).
#include "gui/clipboard_json.h"

#include <set>

#include "engine/workflow_file.h"

namespace vidgraph::gui {

QString nodesToWorkflowJson(const engine::GraphDocument& doc, const std::vector<std::string>& ids) {
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
  auto sub = engine::GraphDocument::build(std::move(nodes), nlohmann::json{{"nodes", layouts}});
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
  return out;
}

}  // namespace vidgraph::gui
