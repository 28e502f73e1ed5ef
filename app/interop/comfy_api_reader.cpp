// Reads the API format (comfy_graph.h): {"<id>": {"class_type", "inputs": {name: value | [id, slot]},
// "_meta": {"title"}}}. As ComfyUI itself does, an input whose value is a two-element list of an id
// (string or number) and an integer slot is a link; anything else is a widget value.
#include "interop/comfy_graph.h"

namespace vidgraph::comfy {

namespace {

bool is_link(const nlohmann::json& v) {
  return v.is_array() && v.size() == 2 && (v[0].is_string() || v[0].is_number_integer()) && v[1].is_number_integer();
}

}  // namespace

engine::Result<ComfyGraph> read_api_graph(const nlohmann::json& root, const std::string& source) {
  if (comfy_format_of(root) != ComfyFormat::Api) {
    return engine::make_error(source + ": not a ComfyUI API-format workflow (every entry needs \"class_type\" and "
                              "\"inputs\")");
  }
  ComfyGraph graph;
  graph.format = ComfyFormat::Api;
  for (const auto& [key, value] : root.items()) {
    ComfyNode node;
    node.id = key;
    node.type = value["class_type"].get<std::string>();
    if (value.contains("_meta") && value["_meta"].is_object()) node.title = value["_meta"].value("title", std::string());
    for (const auto& [name, input] : value["inputs"].items()) {
      if (!is_link(input)) {
        node.values[name] = input;
        continue;
      }
      ComfyInput in;
      in.name = name;
      in.linked = true;
      in.source = ComfySource{comfy_id(input[0]), comfy_int(input[1])};
      node.inputs.push_back(std::move(in));
    }
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

}  // namespace vidgraph::comfy
