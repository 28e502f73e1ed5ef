// Reads the UI format (comfy_graph.h) and flattens subgraph instances into the parent graph (the
// import makes them Vidgraph subgraphs again after conversion: comfy_subgraphs.h).
//
// Links come as arrays [id, origin, origin_slot, target, target_slot, type] or, in subgraphs and
// newer files, as objects {id, origin_id, origin_slot, target_id, target_slot, type}. Inside a
// subgraph definition the node -10 is its input boundary and -20 its output boundary: an inner
// input fed from -10 slot k takes the instance's k-th input, and a parent reader of the instance's
// output k reads what feeds -20 slot k. Inner nodes are named "<instance>-<inner id>"; a muted or
// bypassed instance passes its mode to its inner nodes.
#include <map>

#include "interop/comfy_graph.h"
#include "interop/comfy_widgets.h"

namespace vidgraph::comfy {

namespace {

using nlohmann::json;

constexpr const char* kBoundaryIn = "@in";  // marks a source that is the subgraph's input k
constexpr int kMaxSubgraphDepth = 16;

struct LinkEnds {
  std::string origin;
  int origin_slot = 0;
  std::string target;
  int target_slot = 0;
};

std::map<std::string, LinkEnds> read_links(const json& links) {
  std::map<std::string, LinkEnds> out;
  if (!links.is_array()) return out;
  for (const json& l : links) {
    if (l.is_array() && l.size() >= 5 && l[2].is_number_integer() && l[4].is_number_integer()) {
      out[comfy_id(l[0])] = LinkEnds{comfy_id(l[1]), comfy_int(l[2]), comfy_id(l[3]), comfy_int(l[4])};
    } else if (l.is_object() && l.contains("id") && l.contains("origin_id") && l.contains("target_id")) {
      out[comfy_id(l["id"])] = LinkEnds{comfy_id(l["origin_id"]), comfy_int_field(l, "origin_slot", 0),
                                        comfy_id(l["target_id"]), comfy_int_field(l, "target_slot", 0)};
    }
  }
  return out;
}

struct Layer {
  std::vector<ComfyNode> nodes;
  std::map<int, ComfySource> outputs;  // subgraph output slot → what feeds it
};

ComfySource source_of(const LinkEnds& ends, const std::string& prefix) {
  if (ends.origin == "-10") return ComfySource{kBoundaryIn, ends.origin_slot};
  return ComfySource{prefix + ends.origin, ends.origin_slot};
}

ComfyNode read_node(const json& j, const std::map<std::string, LinkEnds>& links, const std::string& prefix) {
  ComfyNode node;
  node.id = prefix + comfy_id(j.value("id", json(0)));
  node.type = j.value("type", std::string());
  node.title = j.value("title", std::string());
  node.mode = comfy_int_field(j, "mode", 0);
  node.pos = j.value("pos", json());
  node.raw_widgets = j.value("widgets_values", json::array());
  node.values = name_widget_values(node.type, node.raw_widgets);
  if (j.contains("properties") && j["properties"].is_object()) {
    node.proxy_widgets = j["properties"].value("proxyWidgets", json());
  }
  for (const json& in : j.value("inputs", json::array())) {
    if (!in.is_object()) continue;
    ComfyInput input;
    input.name = in.value("name", std::string());
    input.type = in.contains("type") && in["type"].is_string() ? in["type"].get<std::string>() : "";
    const auto link = in.contains("link") && !in["link"].is_null() ? links.find(comfy_id(in["link"])) : links.end();
    if (link != links.end()) {
      input.linked = true;
      input.source = source_of(link->second, prefix);
    }
    node.inputs.push_back(std::move(input));
  }
  for (const json& out : j.value("outputs", json::array())) {
    node.output_types.push_back(out.is_object() && out.contains("type") && out["type"].is_string()
                                    ? out["type"].get<std::string>()
                                    : "");
  }
  return node;
}

// An instance's own values for its promoted widgets (properties.proxyWidgets, in the order of its
// widgets_values) replace the inner nodes' values; the editor's seed-control entries are skipped.
void promote_widgets(Layer& body, const ComfyNode& instance, const std::vector<ComfySubgraph>& nested) {
  const json& proxies = instance.proxy_widgets;
  const json& values = instance.raw_widgets;
  if (!proxies.is_array() || !values.is_array()) return;
  for (std::size_t i = 0; i < proxies.size() && i < values.size(); ++i) {
    const json& p = proxies[i];
    if (!p.is_array() || p.size() < 2 || !p[1].is_string() || p[1] == "control_after_generate") continue;
    const std::string widget = p[1].get<std::string>();
    const std::string target = promoted_widget_node(nested, instance.id + "-" + comfy_id(p[0]), widget);
    for (ComfyNode& n : body.nodes) {
      if (n.id == target) n.values[widget] = values[i];
    }
  }
}

struct Reader {
  std::map<std::string, const json*> subgraphs;  // definition id → definition
  std::vector<ComfySubgraph> instances;          // innermost first
  // instance id → (output slot → what feeds it), applied once the whole layer is read
  using Redirects = std::map<std::string, std::map<int, ComfySource>>;

  engine::Result<Layer> read_layer(const json& nodes, const json& links, const std::string& prefix, int depth);
  engine::Status expand(Layer& layer, Redirects& redirects, const ComfyNode& instance, const json& definition,
                        int depth);
};

// Parent readers of an instance's outputs read what feeds its body's output boundary. A redirect
// may land on another instance's output, so repeat while anything changes (bounded by the count).
void apply_redirects(Layer& layer, const Reader::Redirects& redirects) {
  auto redirect = [&](ComfySource& s) {
    const auto inst = redirects.find(s.node);
    if (inst == redirects.end()) return false;
    const auto to = inst->second.find(s.slot);
    s = to == inst->second.end() ? ComfySource{"", -1} : to->second;
    return true;
  };
  for (std::size_t round = 0; round <= redirects.size(); ++round) {
    bool changed = false;
    for (ComfyNode& n : layer.nodes) {
      for (ComfyInput& in : n.inputs) {
        if (in.linked && redirect(in.source)) {
          changed = true;
          in.linked = in.source.slot >= 0;
        }
      }
    }
    for (auto& [slot, s] : layer.outputs) changed = redirect(s) || changed;
    if (!changed) return;
  }
}

engine::Result<Layer> Reader::read_layer(const json& nodes, const json& links, const std::string& prefix,
                                         int depth) {
  if (depth > kMaxSubgraphDepth) {
    return engine::make_error("subgraphs nest deeper than " + std::to_string(kMaxSubgraphDepth) +
                              " levels (a subgraph that contains itself?)");
  }
  const auto ends = read_links(links);
  Layer layer;
  Redirects redirects;
  for (const auto& [id, e] : ends) {
    if (e.target == "-20") layer.outputs[e.target_slot] = source_of(e, prefix);
  }
  for (const json& j : nodes.is_array() ? nodes : json::array()) {
    if (!j.is_object()) continue;
    ComfyNode node = read_node(j, ends, prefix);
    const auto def = subgraphs.find(node.type);
    if (def == subgraphs.end()) {
      layer.nodes.push_back(std::move(node));
      continue;
    }
    if (auto s = expand(layer, redirects, node, *def->second, depth); !s) return s.error();
  }
  apply_redirects(layer, redirects);
  return layer;
}

// What a source inside an instance's body becomes in the parent: the instance's input for "@in".
ComfySource outside(const ComfySource& s, const ComfyNode& instance, const json& definition) {
  if (s.node != kBoundaryIn) return s;
  const json& ins = definition.value("inputs", json::array());
  const std::string name = s.slot < static_cast<int>(ins.size()) ? ins[s.slot].value("name", std::string()) : "";
  // By name: an instance lists only some of the definition's inputs (promoted widgets may be absent).
  const ComfyInput* in = name.empty() ? nullptr : instance.input(name);
  if (name.empty() && s.slot < static_cast<int>(instance.inputs.size())) in = &instance.inputs[s.slot];
  return in && in->linked ? in->source : ComfySource{"", -1};
}

engine::Status Reader::expand(Layer& layer, Redirects& redirects, const ComfyNode& instance,
                              const json& definition, int depth) {
  auto body = read_layer(definition.value("nodes", json::array()), definition.value("links", json::array()),
                         instance.id + "-", depth + 1);
  if (!body.ok()) return body.error();
  promote_widgets(*body, instance, instances);
  for (ComfyNode& inner : body->nodes) {
    if (instance.mode != 0 && inner.mode == 0) inner.mode = instance.mode;
    for (ComfyInput& in : inner.inputs) {
      if (!in.linked) continue;
      in.source = outside(in.source, instance, definition);
      in.linked = in.source.slot >= 0;
    }
    layer.nodes.push_back(std::move(inner));
  }
  for (const auto& [slot, s] : body->outputs) redirects[instance.id][slot] = outside(s, instance, definition);
  instances.push_back({instance.id, definition.value("name", std::string("subgraph")), instance.proxy_widgets});
  return {};
}

}  // namespace

engine::Result<ComfyGraph> read_ui_graph(const json& root, const std::string& source) {
  if (comfy_format_of(root) != ComfyFormat::Ui) {
    return engine::make_error(source + ": not a ComfyUI UI-format workflow (it needs \"nodes\" and \"links\" arrays)");
  }
  Reader reader;
  const auto defs = root.find("definitions");
  if (defs != root.end() && defs->is_object() && defs->contains("subgraphs") && (*defs)["subgraphs"].is_array()) {
    for (const json& def : (*defs)["subgraphs"]) {  // pointers into `root`, which outlives the reader
      if (def.is_object() && def.contains("id")) reader.subgraphs[comfy_id(def["id"])] = &def;
    }
  }
  auto layer = reader.read_layer(root["nodes"], root["links"], "", 0);
  if (!layer.ok()) return engine::make_error(source + ": " + layer.error().message);
  ComfyGraph graph;
  graph.format = ComfyFormat::Ui;
  graph.nodes = std::move(layer->nodes);
  graph.subgraphs = std::move(reader.instances);
  return graph;
}

}  // namespace vidgraph::comfy
