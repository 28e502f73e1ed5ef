// DocumentController: edits of several links at once (disconnect nodes, insert a node on a link);
// see document_controller.h.
#include <set>
#include <utility>

#include "engine/node_type.h"
#include "gui/document_controller.h"

namespace vidgraph::gui {

engine::Status DocumentController::disconnectNodes(const std::vector<std::string>& ids) {
  std::set<std::pair<std::string, std::string>> inputs;  // (consumer, input), each once
  for (const std::string& id : ids) {
    const engine::Node* node = doc_.find_node(id);
    if (!node) continue;
    for (const auto& [port, link] : node->inputs) inputs.insert({id, port});
    for (const engine::Link& l : doc_.links_from(id)) inputs.insert({l.to_node, l.to_input});
  }
  if (inputs.empty()) return {};
  std::vector<engine::OperationPtr> parts;
  for (const auto& [node, port] : inputs) parts.push_back(engine::make_disconnect(node, port));
  return apply(engine::make_composite("Disconnect " + std::to_string(inputs.size()) + " link(s)", std::move(parts)));
}

engine::Result<std::string> DocumentController::insertNode(const std::string& type, QPointF pos, const std::string& toNode,
                                                           const std::string& toInput, const std::string& newInput) {
  const engine::Node* consumer = doc_.find_node(toNode);
  if (!consumer) return engine::make_error("there is no node '" + toNode + "'");
  auto link = consumer->inputs.find(toInput);
  if (link == consumer->inputs.end()) {
    return engine::make_error("input '" + toInput + "' of '" + toNode + "' is not connected; there is no link to insert into");
  }
  const engine::InputLink from = link->second;
  const engine::NodeType* t = registry_.find(type);
  if (!t) return engine::make_error("there is no node type named '" + type + "'; pick one from the palette");
  std::string wanted = "*";
  if (const engine::NodeType* ct = registry_.find(consumer->type)) {
    if (const engine::PortSpec* p = ct->find_input(toInput)) wanted = p->type;
  }
  std::string newOutput;
  for (const engine::PortSpec& out : t->outputs) {
    if (engine::value_types_compatible(out.type, wanted)) {
      newOutput = out.name;
      break;
    }
  }
  if (newOutput.empty()) {
    return engine::make_error("a " + t->name + " node has no output that '" + toNode + "." + toInput + "' (" + wanted +
                              ") takes; pick another node type");
  }
  engine::Node node;
  node.type = t->name;
  node.type_version = t->version;
  node.id = doc_.unique_node_id(t->name);
  node.params = t->params_with_defaults(nlohmann::json::object());
  const std::string id = node.id;
  std::vector<engine::OperationPtr> parts;
  parts.push_back(engine::make_add_node(std::move(node), engine::GraphDocument::npos, {{"pos", {pos.x(), pos.y()}}}));
  parts.push_back(engine::make_disconnect(toNode, toInput));
  parts.push_back(engine::make_connect(id, newInput, from));
  parts.push_back(engine::make_connect(toNode, toInput, engine::InputLink{id, newOutput}));
  auto status = apply(engine::make_composite("Insert node '" + id + "'", std::move(parts)));
  if (!status.ok()) return status.error();
  return id;
}

}  // namespace vidgraph::gui
