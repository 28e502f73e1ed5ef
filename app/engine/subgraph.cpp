// Subgraph definitions and their expansion for a run (see subgraph.h).
#include "subgraph.h"

#include <algorithm>
#include <set>
#include <utility>

#include "workflow_file.h"
#include "listing.h"

namespace vidgraph::engine {

using nlohmann::json;

namespace {

// Expanded documents past this many nodes are refused (nested instances multiply).
constexpr std::size_t kMaxExpandedNodes = 200000;

std::string names_of(const std::vector<std::string>& names) {
  return names.empty() ? "none" : comma_list(names);
}

template <typename Map>
std::string keys_of(const Map& map) {
  std::vector<std::string> names;
  for (const auto& entry : map) names.push_back(entry.first);
  return names_of(names);
}

bool is_string_field(const json& j, const char* key) { return j.is_object() && j.contains(key) && j[key].is_string(); }

Result<SubgraphDefinition> parse_definition(const std::string& id, const json& j) {
  const std::string where = "subgraph '" + id + "'";
  auto fail = [&](const std::string& what) { return make_error("The workflow's " + where + " " + what + "."); };
  if (!j.is_object()) return fail("is not a JSON object");
  SubgraphDefinition d;
  d.id = id;
  d.name = is_string_field(j, "name") ? j["name"].get<std::string>() : id;
  if (!j.contains("nodes") || !j["nodes"].is_array()) return fail("needs a \"nodes\" array");
  for (std::size_t i = 0; i < j["nodes"].size(); ++i) {
    auto node = node_from_json(j["nodes"][i], where, i);
    if (!node.ok()) return node.error();
    d.nodes.push_back(std::move(node.value()));
  }
  auto graph = GraphDocument::build(d.nodes);
  if (!graph.ok()) return fail("is not a valid graph: node '" + graph.error().node_id + "': " + graph.error().message);
  auto inner = [&](const json& ref, const char* port_key, const std::string& what) -> Result<std::pair<std::string, std::string>> {
    if (!is_string_field(ref, "node") || !is_string_field(ref, port_key)) {
      return fail("has " + what + " that is not {\"node\", \"" + port_key + "\"}");
    }
    const std::string node = ref["node"].get<std::string>();
    if (!graph->find_node(node)) return fail("has " + what + " naming node '" + node + "', which it does not have");
    return std::make_pair(node, ref[port_key].get<std::string>());
  };
  for (const char* key : {"inputs", "outputs", "params"}) {
    if (j.contains(key) && !j[key].is_object()) return fail(std::string("has \"") + key + "\" that is not an object");
  }
  const json inputs = j.value("inputs", json::object()), outputs = j.value("outputs", json::object()),
             params = j.value("params", json::object());  // items() of a temporary would dangle
  for (const auto& [name, consumers] : inputs.items()) {
    if (!consumers.is_array() || consumers.empty()) return fail("has input '" + name + "' that feeds no inner input");
    for (const json& c : consumers) {
      auto ref = inner(c, "input", "input '" + name + "'");
      if (!ref.ok()) return ref.error();
      d.inputs[name].push_back({ref->first, ref->second});
    }
  }
  for (const auto& [name, producer] : outputs.items()) {
    auto ref = inner(producer, "output", "output '" + name + "'");
    if (!ref.ok()) return ref.error();
    d.outputs[name] = {ref->first, ref->second};
  }
  for (const auto& [name, param] : params.items()) {
    if (name == kSubgraphParam) return fail("exposes a param named 'subgraph', the name instances use for the definition");
    auto ref = inner(param, "param", "param '" + name + "'");
    if (!ref.ok()) return ref.error();
    d.params[name] = {ref->first, ref->second};
  }
  if (j.contains("editor") && j["editor"].is_object()) d.editor = j["editor"];
  return d;
}

// The definition an instance names, parsed once per expansion.
class Definitions {
 public:
  explicit Definitions(const GraphDocument& doc) : doc_(doc) {}
  Result<const SubgraphDefinition*> of(const Node& instance) {
    const std::string id = instance_subgraph(instance);
    if (id.empty()) {
      return Error{instance.id, "Subgraph instance '" + instance.id +
                                    "' needs its param 'subgraph' naming one of the workflow's subgraphs (" +
                                    names_of(subgraph_ids(doc_)) + ")."};
    }
    if (auto cached = parsed_.find(id); cached != parsed_.end()) return &cached->second;
    auto d = find_subgraph(doc_, id);
    if (!d.ok()) return Error{instance.id, d.error().message};
    return &parsed_.emplace(id, std::move(d.value())).first->second;
  }

 private:
  const GraphDocument& doc_;
  std::map<std::string, SubgraphDefinition> parsed_;
};

using OutputMap = std::map<std::pair<std::string, std::string>, InputLink>;  // (instance, output) → inner

// Appends the instance's inner nodes to `out`; records where its outputs come from.
Status expand_instance(const Node& instance, const SubgraphDefinition& d, std::vector<Node>& out, OutputMap& outputs) {
  if (instance.bypass) {
    return Error{instance.id, "Subgraph instance '" + instance.id +
                                  "' is bypassed, which subgraphs do not support; bypass nodes inside it instead."};
  }
  const std::string prefix = instance.id + "/";
  auto inner = bind_instance(instance, d, prefix);
  if (!inner.ok()) return inner.error();
  for (Node& n : inner.value()) out.push_back(std::move(n));
  for (const auto& [name, producer] : d.outputs) outputs[{instance.id, name}] = {prefix + producer.node, producer.output};
  return {};
}

}  // namespace

namespace {

// The document's "subgraphs" entry, or an empty object (no copy of the definitions).
const json& definitions_of(const GraphDocument& doc) {
  static const json kNone = json::object();
  const auto it = doc.extra().find(kSubgraphsKey);
  return it != doc.extra().end() ? *it : kNone;
}

}  // namespace

std::vector<std::string> subgraph_ids(const GraphDocument& doc) {
  std::vector<std::string> ids;
  const json& all = definitions_of(doc);
  if (all.is_object()) {
    for (const auto& entry : all.items()) ids.push_back(entry.key());
  }
  return ids;
}

std::string instance_subgraph(const Node& instance) {
  const auto it = instance.params.find(kSubgraphParam);
  return it != instance.params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::vector<Node>> bind_instance(const Node& instance, const SubgraphDefinition& d, const std::string& prefix) {
  const std::string& id = instance.id;
  auto fail = [&](const std::string& what) { return Error{id, "Subgraph instance '" + id + "' " + what + "."}; };
  for (const auto& [param, value] : instance.params.items()) {
    if (param != kSubgraphParam && !d.params.count(param)) {
      return fail("sets param '" + param + "', which subgraph '" + d.id + "' does not expose (it exposes: " +
                  keys_of(d.params) + ")");
    }
  }
  for (const auto& [port, link] : instance.inputs) {
    if (!d.inputs.count(port)) {
      return fail("has input '" + port + "' connected, which subgraph '" + d.id + "' does not expose (it exposes: " +
                  keys_of(d.inputs) + ")");
    }
  }
  std::vector<Node> nodes;
  std::map<std::string, std::size_t> at;  // inner id → index in nodes
  for (const Node& inner : d.nodes) {
    Node n = inner;
    n.id = prefix + inner.id;
    for (auto& [port, link] : n.inputs) link.node = prefix + link.node;
    at[inner.id] = nodes.size();
    nodes.push_back(std::move(n));
  }
  for (const auto& [name, consumers] : d.inputs) {
    const auto link = instance.inputs.find(name);
    if (link == instance.inputs.end()) continue;  // unconnected: inner links, if any, stay
    for (const InnerInput& c : consumers) nodes[at.at(c.node)].inputs[c.input] = link->second;
  }
  for (const auto& [name, value] : instance.params.items()) {
    if (name == kSubgraphParam) continue;
    const InnerParam& p = d.params.at(name);
    nodes[at.at(p.node)].params[p.param] = value;
  }
  return nodes;
}

Result<SubgraphDefinition> find_subgraph(const GraphDocument& doc, const std::string& id) {
  const json& all = definitions_of(doc);
  if (!all.is_object()) return make_error("The workflow's \"subgraphs\" is not a JSON object of definitions by id.");
  if (!all.contains(id)) {
    return make_error("The workflow has no subgraph '" + id + "' (it has: " + names_of(subgraph_ids(doc)) + ").");
  }
  return parse_definition(id, all[id]);
}

json subgraph_to_json(const SubgraphDefinition& d) {
  json nodes = json::array();
  for (const Node& n : d.nodes) nodes.push_back(node_to_json(n));
  json inputs = json::object(), outputs = json::object(), params = json::object();
  for (const auto& [name, consumers] : d.inputs) {
    for (const InnerInput& c : consumers) inputs[name].push_back({{"node", c.node}, {"input", c.input}});
  }
  for (const auto& [name, p] : d.outputs) outputs[name] = {{"node", p.node}, {"output", p.output}};
  for (const auto& [name, p] : d.params) params[name] = {{"node", p.node}, {"param", p.param}};
  return {{"name", d.name}, {"nodes", nodes}, {"inputs", inputs}, {"outputs", outputs}, {"params", params},
          {"editor", d.editor}};
}

namespace {

Result<SubgraphInterface> interface_at(const GraphDocument& doc, const Registry& registry, const Node& instance,
                                       int depth) {
  if (depth > kMaxSubgraphDepth) return Error{instance.id, "Subgraphs nest too deep here."};
  auto d = find_subgraph(doc, instance_subgraph(instance));
  if (!d.ok()) return Error{instance.id, d.error().message};
  std::map<std::string, const Node*> inner;
  for (const Node& n : d->nodes) inner[n.id] = &n;
  std::map<std::string, SubgraphInterface> nested;  // inner instance id → its interface
  auto interface_of = [&](const Node& n) -> const SubgraphInterface* {
    if (n.type != kSubgraphType) return nullptr;
    auto it = nested.find(n.id);
    if (it == nested.end()) {
      auto i = interface_at(doc, registry, n, depth + 1);
      it = nested.emplace(n.id, i.ok() ? std::move(i.value()) : SubgraphInterface{}).first;
    }
    return &it->second;
  };
  auto port_of = [&](const std::string& node, const std::string& port, bool input) {
    const Node& n = *inner.at(node);
    if (const SubgraphInterface* i = interface_of(n)) {
      for (const PortSpec& p : input ? i->inputs : i->outputs) {
        if (p.name == port) return p;
      }
    } else if (const NodeType* t = registry.find(n.type)) {
      if (const PortSpec* p = input ? t->find_input(port) : t->find_output(port)) return *p;
    }
    PortSpec any;
    any.type = "*";
    any.optional = input;
    return any;
  };
  SubgraphInterface out;
  out.name = d->name;
  out.nodes = d->nodes.size();
  for (const auto& [name, consumers] : d->inputs) {
    PortSpec p = port_of(consumers.front().node, consumers.front().input, true);
    p.name = name;
    p.optional = true;  // an exposed input left unconnected keeps what the inner graph has
    out.inputs.push_back(std::move(p));
  }
  for (const auto& [name, producer] : d->outputs) {
    PortSpec p = port_of(producer.node, producer.output, false);
    p.name = name;
    out.outputs.push_back(std::move(p));
  }
  for (const auto& [name, ref] : d->params) {
    const Node& n = *inner.at(ref.node);
    const ParamSpec* spec = nullptr;
    if (const SubgraphInterface* i = interface_of(n)) {
      for (const ParamSpec& p : i->params) {
        if (p.name == ref.param) spec = &p;
      }
    } else if (const NodeType* t = registry.find(n.type)) {
      spec = t->find_param(ref.param);
    }
    if (!spec) continue;
    ParamSpec p = *spec;
    p.name = name;
    // The inner node's own value is the default an instance starts from.
    if (const auto v = n.params.find(ref.param); v != n.params.end()) p.default_value = *v;
    out.params.push_back(std::move(p));
  }
  return out;
}

}  // namespace

Result<SubgraphInterface> subgraph_interface(const GraphDocument& doc, const Registry& registry, const Node& instance) {
  return interface_at(doc, registry, instance, 0);
}

NodeType subgraph_node_type(const SubgraphInterface& interface) {
  NodeType t;
  t.name = kSubgraphType;
  t.display_name = interface.name;
  t.category = "subgraph";
  t.description = "A subgraph of " + std::to_string(interface.nodes) + " nodes; its exposed params are set here.";
  t.inputs = interface.inputs;
  t.outputs = interface.outputs;
  t.params = interface.params;
  return t;
}

Result<ExposedTarget> exposed_param_target(const GraphDocument& doc, const Node& instance, const std::string& param) {
  ExposedTarget t{instance.id, param, instance.type};
  std::string definition = instance_subgraph(instance);
  for (int depth = 0; t.type == kSubgraphType; ++depth) {
    if (depth >= kMaxSubgraphDepth) {
      return make_error("subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth) + " levels");
    }
    auto d = find_subgraph(doc, definition);
    if (!d.ok()) return d.error();
    const auto exposed = d->params.find(t.param);
    if (exposed == d->params.end()) {
      return make_error("subgraph '" + d->id + "' exposes no param '" + t.param + "' (it exposes: " +
                        keys_of(d->params) + ")");
    }
    const auto inner = std::find_if(d->nodes.begin(), d->nodes.end(),
                                    [&](const Node& n) { return n.id == exposed->second.node; });
    if (inner == d->nodes.end()) return make_error("subgraph '" + d->id + "' has no node '" + exposed->second.node + "'");
    t = {t.path + "/" + inner->id, exposed->second.param, inner->type};
    definition = instance_subgraph(*inner);
  }
  return t;
}

bool has_subgraph_instances(const GraphDocument& doc) {
  for (const Node& n : doc.nodes()) {
    if (n.type == kSubgraphType) return true;
  }
  return false;
}

Result<GraphDocument> expand_subgraphs(const GraphDocument& doc) {
  std::vector<Node> nodes = doc.nodes();
  Definitions definitions(doc);
  for (int depth = 0;; ++depth) {
    std::set<std::string> instances;
    for (const Node& n : nodes) {
      if (n.type == kSubgraphType) instances.insert(n.id);
    }
    if (instances.empty()) break;
    if (depth == kMaxSubgraphDepth) {
      return Error{*instances.begin(), "Subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth) +
                                           " levels at '" + *instances.begin() +
                                           "'; does a subgraph contain an instance of itself?"};
    }
    std::vector<Node> out;
    OutputMap outputs;
    for (const Node& n : nodes) {
      if (n.type != kSubgraphType) {
        out.push_back(n);
        continue;
      }
      auto d = definitions.of(n);
      if (!d.ok()) return d.error();
      if (auto s = expand_instance(n, *d.value(), out, outputs); !s.ok()) return s.error();
    }
    if (out.size() > kMaxExpandedNodes) {
      return make_error("The subgraphs expand to more than " + std::to_string(kMaxExpandedNodes) +
                        " nodes; nest fewer instances.");
    }
    for (Node& n : out) {
      for (auto& [port, link] : n.inputs) {
        if (const auto it = outputs.find({link.node, link.output}); it != outputs.end()) {
          link = it->second;
        } else if (instances.count(link.node)) {
          return Error{n.id, "Input '" + port + "' of '" + n.id + "' is linked to output '" + link.output +
                                 "' of subgraph instance '" + link.node +
                                 "', which its subgraph does not expose; reconnect it."};
        }
      }
    }
    nodes = std::move(out);
  }
  return GraphDocument::build(std::move(nodes), doc.editor(), doc.extra(), doc.registry(), /*node_paths=*/true);
}

std::vector<std::string> expanded_targets(const GraphDocument& expanded, const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  for (const std::string& t : targets) {
    if (expanded.find_node(t)) {
      out.push_back(t);
      continue;
    }
    const std::size_t before = out.size();
    for (const Node& n : expanded.nodes()) {
      if (n.id.rfind(t + "/", 0) == 0) out.push_back(n.id);
    }
    if (out.size() == before) out.push_back(t);  // validation names it
  }
  return out;
}

}  // namespace vidgraph::engine
