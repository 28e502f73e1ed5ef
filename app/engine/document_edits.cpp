// GraphDocument edits: each checks first, then changes and notifies (see document.h).
#include "document.h"

#include "registry.h"

namespace vidgraph::engine {

using nlohmann::json;

Status GraphDocument::add_node(Node node, std::size_t index) {
  if (auto s = can_add_node(node); !s) return s;
  if (!node.params.is_object()) node.params = json::object();
  if (!node.extra.is_object()) node.extra = json::object();
  if (registry_ && !node.inputs.empty()) {
    // Type checks need the node in place: check against a scratch copy.
    GraphDocument scratch(*this);
    Node bare = node;
    bare.inputs.clear();
    scratch.nodes_.push_back(std::move(bare));
    scratch.reindex();
    for (const auto& [port, link] : node.inputs) {
      if (auto s = scratch.check_link_types(node.id, port, link); !s) return s;
    }
  }
  const std::string id = node.id;
  if (index >= nodes_.size()) {
    nodes_.push_back(std::move(node));
  } else {
    nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(index), std::move(node));
  }
  reindex();
  notify(ChangeKind::NodeAdded, id);
  return {};
}

Result<Node> GraphDocument::remove_node(const std::string& id) {
  const std::size_t index = index_of(id);
  if (index == npos) return Error{id, "there is no node '" + id + "' to remove"};
  auto consumers = links_from(id);
  if (!consumers.empty()) {
    return Error{id, "node '" + consumers.front().to_node + "' still uses an output of '" + id +
                         "'; remove those links first"};
  }
  Node removed = std::move(nodes_[index]);
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(index));
  reindex();
  auto nodes = editor_.find("nodes");
  if (nodes != editor_.end() && nodes->is_object()) nodes->erase(id);
  notify(ChangeKind::NodeRemoved, id);
  return removed;
}

Status GraphDocument::connect(const std::string& to_node, const std::string& input, const InputLink& from) {
  if (auto s = can_connect(to_node, input, from); !s) return s;
  find_mutable(to_node)->inputs[input] = from;
  notify(ChangeKind::LinkAdded, to_node, {}, input);
  return {};
}

Result<InputLink> GraphDocument::disconnect(const std::string& to_node, const std::string& input) {
  Node* dst = find_mutable(to_node);
  if (!dst) return Error{to_node, "there is no node '" + to_node + "'"};
  auto it = dst->inputs.find(input);
  if (it == dst->inputs.end()) return Error{to_node, "input '" + input + "' is not connected"};
  InputLink old = it->second;
  dst->inputs.erase(it);
  notify(ChangeKind::LinkRemoved, to_node, {}, input);
  return old;
}

Status GraphDocument::rename_node(const std::string& old_id, const std::string& new_id) {
  Node* node = find_mutable(old_id);
  if (!node) return Error{old_id, "there is no node '" + old_id + "' to rename"};
  if (old_id == new_id) return {};
  if (!is_valid_node_id(new_id)) {
    return Error{old_id, "'" + new_id + "' is not a valid node id; use 1-64 letters, digits, '_' or '-'"};
  }
  if (find_node(new_id)) return Error{old_id, "a node with id '" + new_id + "' already exists; choose another id"};
  node->id = new_id;
  reindex();
  for (Node& n : nodes_) {
    for (auto& [port, link] : n.inputs) {
      if (link.node == old_id) link.node = new_id;
    }
  }
  auto nodes = editor_.find("nodes");
  if (nodes != editor_.end() && nodes->is_object()) {
    auto it = nodes->find(old_id);
    if (it != nodes->end()) {
      json layout = *it;
      nodes->erase(old_id);
      (*nodes)[new_id] = std::move(layout);
    }
  }
  notify(ChangeKind::NodeRenamed, new_id, old_id);
  return {};
}

Result<json> GraphDocument::set_param(const std::string& id, const std::string& param, json value) {
  Node* node = find_mutable(id);
  if (!node) return Error{id, "there is no node '" + id + "'"};
  if (param.empty()) return Error{id, "a param needs a name"};
  if (registry_ && !value.is_null()) {
    if (const NodeType* type = registry_->find(node->type)) {
      if (const ParamSpec* spec = type->find_param(param)) {
        // Only the JSON type is enforced here; ranges, steps and choices are validation's job.
        ParamSpec loose = *spec;
        loose.min.reset();
        loose.max.reset();
        loose.step = 0;
        if (loose.kind == ParamKind::Enum) loose.kind = ParamKind::String;
        loose.rule = nullptr;  // a format rule (a plugin's list) is validation's too
        if (auto s = loose.check(value); !s) return Error{id, s.error().message};
      }
    }
  }
  json old = node->params.contains(param) ? node->params[param] : json(nullptr);
  if (value.is_null()) {
    node->params.erase(param);
  } else {
    node->params[param] = std::move(value);
  }
  notify(ChangeKind::ParamChanged, id, {}, param);
  return old;
}

Result<bool> GraphDocument::set_bypass(const std::string& id, bool bypass) {
  Node* node = find_mutable(id);
  if (!node) return Error{id, "there is no node '" + id + "'"};
  const bool old = node->bypass;
  node->bypass = bypass;
  notify(ChangeKind::NodeUpdated, id);
  return old;
}

Status GraphDocument::set_node_data(const std::string& id, int type_version, json params) {
  Node* node = find_mutable(id);
  if (!node) return Error{id, "there is no node '" + id + "'"};
  if (!params.is_object()) return Error{id, "node params must be a JSON object"};
  node->type_version = type_version;
  node->params = std::move(params);
  notify(ChangeKind::NodeUpdated, id);
  return {};
}

Result<json> GraphDocument::set_node_editor(const std::string& id, json layout) {
  if (!find_node(id)) return Error{id, "there is no node '" + id + "'"};
  json& nodes = editor_["nodes"];
  if (!nodes.is_object()) nodes = json::object();
  json old = nodes.contains(id) ? nodes[id] : json(nullptr);
  if (layout.is_null()) {
    nodes.erase(id);
  } else {
    nodes[id] = std::move(layout);
  }
  if (nodes.empty()) editor_.erase("nodes");
  notify(ChangeKind::EditorChanged, id);
  return old;
}

void GraphDocument::set_editor_state(json state) {
  json nodes = editor_.contains("nodes") ? editor_["nodes"] : json(nullptr);
  editor_ = state.is_object() ? std::move(state) : json::object();
  editor_.erase("nodes");
  if (!nodes.is_null()) editor_["nodes"] = std::move(nodes);
  notify(ChangeKind::EditorChanged, {});
}

void GraphDocument::set_extra(json extra) {
  extra_ = extra.is_object() ? std::move(extra) : json::object();
  notify(ChangeKind::Reset, {});
}

void GraphDocument::clear() {
  nodes_.clear();
  index_.clear();
  editor_ = json::object();
  extra_ = json::object();
  notify(ChangeKind::Reset, {});
}

}  // namespace vidgraph::engine
