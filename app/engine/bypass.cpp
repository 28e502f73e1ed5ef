// Bypassed nodes (see bypass.h).
#include "bypass.h"

namespace vidgraph::engine {

std::map<std::string, std::string> bypass_routes(const Node& node, const NodeType& type) {
  std::map<std::string, std::string> routes;
  for (const PortSpec& out : type.outputs) {
    for (const PortSpec& in : type.inputs) {
      if (!node.inputs.count(in.name)) continue;
      if (in.type == out.type || in.type == "*" || out.type == "*") {
        routes[out.name] = in.name;
        break;
      }
    }
  }
  return routes;
}

std::vector<std::string> default_targets(const GraphDocument& doc) {
  std::vector<std::string> targets;
  for (const std::string& id : doc.sink_nodes()) {
    if (!doc.find_node(id)->bypass) targets.push_back(id);
  }
  return targets;
}

}  // namespace vidgraph::engine
