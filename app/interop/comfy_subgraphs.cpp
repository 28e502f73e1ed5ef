// Implements comfy_subgraphs.h.
#include "interop/comfy_subgraphs.h"

#include <optional>
#include <set>

#include "engine/subgraph_edits.h"
#include "engine/listing.h"

namespace vidgraph::comfy {

using nlohmann::json;

namespace {

using ParamKey = std::pair<std::string, std::string>;  // (node, param)

// The param a promoted widget of ComfyUI node `id` lands on (through nested instances), if the
// converter carried that widget to one.
std::optional<engine::InnerParam> promoted_param(const ComfyGraph& graph, const CarriedWidgets& carried,
                                                 const std::string& id, const std::string& widget) {
  const auto c = carried.find({promoted_widget_node(graph.subgraphs, id, widget), widget});
  return c == carried.end() ? std::nullopt : std::optional<engine::InnerParam>(c->second);
}

// The nodes of `doc` made from ComfyUI nodes under `prefix` (instances made earlier by their
// ComfyUI id), the Load Wan Model excepted.
std::vector<std::string> members(const engine::GraphDocument& doc, const std::map<std::string, std::string>& origin,
                                 const std::string& prefix) {
  std::vector<std::string> ids;
  for (const engine::Node& n : doc.nodes()) {
    if (n.type == "LoadWanModel") continue;
    const auto made = origin.find(n.id);
    const json from = made != origin.end() ? json(made->second) : n.extra.value("comfyui_node", json());
    if (from.is_string() && from.get<std::string>().rfind(prefix, 0) == 0) ids.push_back(n.id);
  }
  return ids;
}

engine::Status apply(engine::GraphDocument& doc, engine::Result<engine::OperationPtr> op) {
  if (!op.ok()) return op.error();
  if (auto done = (*op)->apply(doc); !done.ok()) return done.error();
  return {};
}

}  // namespace

engine::Status group_subgraphs(engine::GraphDocument& doc, const ComfyGraph& graph, const CarriedWidgets& carried,
                               ImportReport& report) {
  std::map<std::string, std::string> origin;        // Vidgraph instance → its ComfyUI instance id
  std::map<ParamKey, engine::InnerParam> exposed_at;  // carried param → the instance param that sets it
  for (const ComfySubgraph& sub : graph.subgraphs) {
    const std::vector<std::string> ids = members(doc, origin, sub.id + "-");
    const std::string named = "ComfyUI subgraph '" + sub.name + "' (node " + sub.id + ")";
    if (ids.empty()) {
      report.notes.push_back(named + " holds nothing Vidgraph runs besides model loaders, so it is no subgraph here.");
      continue;
    }
    std::string instance;
    if (auto s = apply(doc, engine::make_subgraph_from(doc, ids, sub.name, &instance)); !s) return s;
    origin[instance] = sub.id;
    const std::string definition = engine::instance_subgraph(*doc.find_node(instance));
    const std::set<std::string> inside(ids.begin(), ids.end());
    std::set<std::string> names;
    std::vector<std::string> exposed, left_out;
    for (const json& p : sub.promoted.is_array() ? sub.promoted : json::array()) {
      if (!p.is_array() || p.size() < 2 || !p[1].is_string() || p[1] == "control_after_generate") continue;
      const std::string widget = p[1].get<std::string>();
      const auto param = p[0].is_string() || p[0].is_number_integer()
                             ? promoted_param(graph, carried, sub.id + "-" + comfy_id(p[0]), widget)
                             : std::nullopt;
      const ParamKey key = param ? ParamKey{param->node, param->param} : ParamKey{};
      const auto at = exposed_at.find(key);
      const engine::InnerParam inner = at != exposed_at.end() ? at->second : param.value_or(engine::InnerParam{});
      if (!param || !inside.count(inner.node)) {
        left_out.push_back(widget);
        continue;
      }
      std::string name = param->param;
      for (int i = 2; names.count(name); ++i) name = param->param + "_" + std::to_string(i);
      if (auto s = apply(doc, engine::make_expose_param(doc, definition, name, inner)); !s) return s;
      names.insert(name);
      exposed_at[key] = engine::InnerParam{instance, name};
      exposed.push_back(name);
    }
    std::string note = named + " is the subgraph instance '" + instance + "' of " + std::to_string(ids.size()) +
                       " nodes" + (exposed.empty() ? "" : ", with the params " + engine::comma_list(exposed)) + ".";
    if (!left_out.empty()) {
      note += " Its promoted widgets " + engine::comma_list(left_out) + " have no Vidgraph param of their own.";
    }
    report.notes.push_back(note);
  }
  return {};
}

}  // namespace vidgraph::comfy
