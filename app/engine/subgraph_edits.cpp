// Undoable subgraph edits (see subgraph_edits.h).
#include "subgraph_edits.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "registry.h"

namespace vidgraph::engine {

using nlohmann::json;

namespace {

class SetSubgraphOp final : public Operation {
 public:
  SetSubgraphOp(std::string id, json definition) : id_(std::move(id)), definition_(std::move(definition)) {}

  Result<OperationPtr> apply(GraphDocument& doc) const override {
    json extra = doc.extra();
    json all = extra.contains(kSubgraphsKey) && extra[kSubgraphsKey].is_object() ? extra[kSubgraphsKey] : json::object();
    json previous = all.contains(id_) ? all[id_] : json(nullptr);
    if (definition_.is_null()) {
      all.erase(id_);
    } else {
      all[id_] = definition_;
    }
    if (all.empty()) {
      extra.erase(kSubgraphsKey);
    } else {
      extra[kSubgraphsKey] = std::move(all);
    }
    doc.set_extra(std::move(extra));
    return OperationPtr(std::make_unique<SetSubgraphOp>(id_, std::move(previous)));
  }
  std::string description() const override {
    return (definition_.is_null() ? "Remove subgraph '" : "Set subgraph '") + id_ + "'";
  }
  OperationPtr clone() const override { return std::make_unique<SetSubgraphOp>(id_, definition_); }

 private:
  std::string id_;
  json definition_;
};

std::set<std::string> to_set(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }

// A name unused among `taken`: base, base_2, base_3, ...
std::string unique_name(const std::string& base, const std::set<std::string>& taken) {
  if (!taken.count(base)) return base;
  for (int i = 2;; ++i) {
    const std::string candidate = base + "_" + std::to_string(i);
    if (!taken.count(candidate)) return candidate;
  }
}

// A layout at the mean position of the nodes that have one, or null when none has.
json mean_position(const GraphDocument& doc, const std::vector<std::string>& ids) {
  double x = 0, y = 0;
  int n = 0;
  for (const std::string& id : ids) {
    if (const auto pos = layout_position(doc.node_editor(id))) {
      x += (*pos)[0];
      y += (*pos)[1];
      ++n;
    }
  }
  return n == 0 ? json(nullptr) : json{{"pos", {x / n, y / n}}};
}

}  // namespace

OperationPtr make_set_subgraph(std::string id, json definition) {
  return std::make_unique<SetSubgraphOp>(std::move(id), std::move(definition));
}

Result<OperationPtr> make_subgraph_from(const GraphDocument& doc, const std::vector<std::string>& ids,
                                        const std::string& name, std::string* instance_id) {
  if (ids.empty()) return make_error("Select the nodes to put in the subgraph.");
  const std::set<std::string> selected(ids.begin(), ids.end());
  for (const std::string& id : selected) {
    if (!doc.find_node(id)) return make_error("There is no node '" + id + "' to put in a subgraph.");
  }
  SubgraphDefinition d;
  d.id = unique_name(doc.unique_node_id(name.empty() ? "subgraph" : name), to_set(subgraph_ids(doc)));
  d.name = name.empty() ? d.id : name;
  Node instance;
  instance.id = doc.unique_node_id(d.id);
  instance.type = kSubgraphType;
  instance.params = {{kSubgraphParam, d.id}};
  std::map<std::pair<std::string, std::string>, std::string> input_of;  // outside source → exposed input
  std::set<std::string> input_names, output_names;
  json layouts = json::object();
  for (const Node& n : doc.nodes()) {  // document order
    if (!selected.count(n.id)) continue;
    Node inner = n;
    for (const auto& [port, link] : n.inputs) {
      if (selected.count(link.node)) continue;
      inner.inputs.erase(port);
      auto [it, fresh] = input_of.emplace(std::make_pair(link.node, link.output), std::string());
      if (fresh) {
        it->second = unique_name(port, input_names);
        input_names.insert(it->second);
        instance.inputs[it->second] = link;
      }
      d.inputs[it->second].push_back({n.id, port});
    }
    if (const json layout = doc.node_editor(n.id); !layout.is_null()) layouts[n.id] = layout;
    d.nodes.push_back(std::move(inner));
  }
  if (!layouts.empty()) d.editor["nodes"] = layouts;
  std::map<std::pair<std::string, std::string>, std::string> output_of;  // inner output → exposed output
  std::vector<OperationPtr> rewires;
  for (const Link& l : doc.links()) {
    if (!selected.count(l.from_node) || selected.count(l.to_node)) continue;
    auto [it, fresh] = output_of.emplace(std::make_pair(l.from_node, l.from_output), std::string());
    if (fresh) {
      it->second = unique_name(l.from_output, output_names);
      output_names.insert(it->second);
      d.outputs[it->second] = {l.from_node, l.from_output};
    }
    rewires.push_back(make_connect(l.to_node, l.to_input, InputLink{instance.id, it->second}));
  }
  std::vector<OperationPtr> parts;
  parts.push_back(make_set_subgraph(d.id, subgraph_to_json(d)));
  parts.push_back(make_remove_nodes(doc, ids));
  if (instance_id) *instance_id = instance.id;
  parts.push_back(make_add_node(std::move(instance), GraphDocument::npos, mean_position(doc, ids)));
  for (auto& r : rewires) parts.push_back(std::move(r));
  return make_composite("Make subgraph '" + d.name + "'", std::move(parts));
}

Result<OperationPtr> make_unpack_subgraph(const GraphDocument& doc, const std::string& instance_id) {
  const Node* instance = doc.find_node(instance_id);
  if (!instance || instance->type != kSubgraphType) {
    return make_error("'" + instance_id + "' is not a subgraph instance, so there is nothing to unpack.");
  }
  auto found = find_subgraph(doc, instance_subgraph(*instance));
  if (!found.ok()) return Error{instance_id, found.error().message};
  const SubgraphDefinition& d = found.value();
  auto inner = bind_instance(*instance, d, "");
  if (!inner.ok()) return inner.error();
  // The inner layout moved to where the instance is: its first node's position at the instance's.
  const json nodes_layout = d.editor.value("nodes", json::object());
  const auto at = layout_position(doc.node_editor(instance_id));
  const auto first = nodes_layout.is_object() && !d.nodes.empty()
                         ? layout_position(nodes_layout.value(d.nodes.front().id, json()))
                         : std::nullopt;
  const double dx = at && first ? (*at)[0] - (*first)[0] : 0.0, dy = at && first ? (*at)[1] - (*first)[1] : 0.0;
  const std::map<std::string, std::string> renamed = paste_ids(doc, *inner);
  std::vector<OperationPtr> parts;
  const std::vector<Link> consumers = doc.links_from(instance_id);
  parts.push_back(make_remove_node(instance_id));
  parts.push_back(make_paste(doc, std::move(inner.value()), nodes_layout, dx, dy));
  for (const Link& l : consumers) {
    const auto out = d.outputs.find(l.from_output);
    if (out == d.outputs.end()) continue;  // a link to an output the subgraph lacks: dropped with the instance
    parts.push_back(make_connect(l.to_node, l.to_input, InputLink{renamed.at(out->second.node), out->second.output}));
  }
  const bool shared = std::any_of(doc.nodes().begin(), doc.nodes().end(), [&](const Node& n) {
    return n.id != instance_id && n.type == kSubgraphType && instance_subgraph(n) == d.id;
  });
  if (!shared) parts.push_back(make_set_subgraph(d.id, nullptr));
  return make_composite("Unpack subgraph '" + instance_id + "'", std::move(parts));
}

Status add_exposed_param(nlohmann::json& definition, const std::string& name, const InnerParam& inner) {
  if (name.empty() || name == kSubgraphParam || definition.value("params", nlohmann::json::object()).contains(name)) {
    return make_error("The subgraph cannot expose a param named '" + name +
                      "': choose a name it does not use yet (and not 'subgraph').");
  }
  definition["params"][name] = {{"node", inner.node}, {"param", inner.param}};
  return {};
}

Result<OperationPtr> make_expose_param(const GraphDocument& doc, const std::string& id, const std::string& name,
                                       const InnerParam& inner) {
  auto found = find_subgraph(doc, id);
  if (!found.ok()) return found.error();
  const SubgraphDefinition& d = found.value();
  const auto node = std::find_if(d.nodes.begin(), d.nodes.end(), [&](const Node& n) { return n.id == inner.node; });
  if (node == d.nodes.end()) return make_error("Subgraph '" + id + "' has no node '" + inner.node + "'.");
  const NodeType* type = doc.registry() ? doc.registry()->find(node->type) : nullptr;
  if (type && !type->find_param(inner.param)) {
    return make_error("Node '" + inner.node + "' (" + node->type + ") has no param '" + inner.param + "'.");
  }
  nlohmann::json definition = subgraph_to_json(d);
  if (auto added = add_exposed_param(definition, name, inner); !added) return added.error();
  return make_set_subgraph(id, std::move(definition));
}

Result<OperationPtr> make_unexpose_param(const GraphDocument& doc, const std::string& id, const std::string& name) {
  auto found = find_subgraph(doc, id);
  if (!found.ok()) return found.error();
  SubgraphDefinition& d = found.value();
  if (!d.params.erase(name)) return make_error("Subgraph '" + id + "' exposes no param '" + name + "'.");
  std::vector<OperationPtr> parts;
  for (const Node& n : doc.nodes()) {
    if (n.type == kSubgraphType && instance_subgraph(n) == id && n.params.contains(name)) {
      parts.push_back(make_set_param(n.id, name, nullptr));
    }
  }
  parts.push_back(make_set_subgraph(id, subgraph_to_json(d)));
  return make_composite("Unexpose '" + name + "' of subgraph '" + id + "'", std::move(parts));
}

}  // namespace vidgraph::engine
