// GraphDocument: reads, invariant checks and edits (see document.h).
#include "document.h"

#include <algorithm>
#include <set>

#include "plan.h"
#include "registry.h"

namespace vidgraph::engine {

using nlohmann::json;

bool is_valid_node_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool is_valid_node_path(const std::string& id) {
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = id.find('/', start);
    if (!is_valid_node_id(id.substr(start, slash == std::string::npos ? std::string::npos : slash - start))) {
      return false;
    }
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

namespace {

std::string invalid_id_message(const std::string& id) {
  return "'" + id + "' is not a valid node id; use 1-64 letters, digits, '_' or '-'";
}

}  // namespace

GraphDocument::GraphDocument(const GraphDocument& other)
    : registry_(other.registry_),
      nodes_(other.nodes_),
      index_(other.index_),
      editor_(other.editor_),
      extra_(other.extra_) {}

GraphDocument& GraphDocument::operator=(const GraphDocument& other) {
  if (this != &other) {
    registry_ = other.registry_;
    nodes_ = other.nodes_;
    index_ = other.index_;
    editor_ = other.editor_;
    extra_ = other.extra_;
    notify(ChangeKind::Reset, {});
  }
  return *this;
}

GraphDocument::GraphDocument(GraphDocument&& other) noexcept
    : registry_(other.registry_),
      nodes_(std::move(other.nodes_)),
      index_(std::move(other.index_)),
      editor_(std::move(other.editor_)),
      extra_(std::move(other.extra_)) {}

GraphDocument& GraphDocument::operator=(GraphDocument&& other) noexcept {
  if (this != &other) {
    registry_ = other.registry_;
    nodes_ = std::move(other.nodes_);
    index_ = std::move(other.index_);
    editor_ = std::move(other.editor_);
    extra_ = std::move(other.extra_);
    notify(ChangeKind::Reset, {});
  }
  return *this;
}

Result<GraphDocument> GraphDocument::build(std::vector<Node> nodes, json editor, json extra,
                                           const Registry* registry, bool node_paths) {
  GraphDocument doc(registry);
  doc.editor_ = editor.is_object() ? std::move(editor) : json::object();
  doc.extra_ = extra.is_object() ? std::move(extra) : json::object();
  std::set<std::string> ids;
  for (const Node& n : nodes) {
    if (!(node_paths ? is_valid_node_path(n.id) : is_valid_node_id(n.id))) return Error{n.id, invalid_id_message(n.id)};
    if (!ids.insert(n.id).second) {
      return Error{n.id, "two nodes have the id '" + n.id + "'; node ids must be unique, rename one"};
    }
  }
  for (const Node& n : nodes) {
    for (const auto& [port, link] : n.inputs) {
      if (!ids.count(link.node)) {
        return Error{n.id, "input '" + port + "' is linked to node '" + link.node +
                               "', which does not exist; reconnect or remove the link"};
      }
      if (link.node == n.id) return Error{n.id, "input '" + port + "' is linked to its own node; remove the link"};
    }
  }
  doc.nodes_ = std::move(nodes);
  doc.reindex();
  if (std::string on_cycle = find_cycle_node(doc); !on_cycle.empty()) {
    return Error{on_cycle, "the links form a cycle through this node; remove one link of the cycle"};
  }
  return doc;
}

void GraphDocument::reindex() {
  index_.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].id] = i;
}

const Node* GraphDocument::find_node(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

Node* GraphDocument::find_mutable(const std::string& id) {
  return const_cast<Node*>(static_cast<const GraphDocument*>(this)->find_node(id));
}

std::size_t GraphDocument::index_of(const std::string& id) const {
  auto it = index_.find(id);
  return it == index_.end() ? npos : it->second;
}

std::vector<Link> GraphDocument::links() const {
  std::vector<Link> out;
  for (const Node& n : nodes_) {
    for (const auto& [port, link] : n.inputs) out.push_back(Link{link.node, link.output, n.id, port});
  }
  return out;
}

std::vector<Link> GraphDocument::links_from(const std::string& node_id) const {
  std::vector<Link> out;
  for (const Node& n : nodes_) {
    for (const auto& [port, link] : n.inputs) {
      if (link.node == node_id) out.push_back(Link{link.node, link.output, n.id, port});
    }
  }
  return out;
}

json GraphDocument::node_editor(const std::string& id) const {
  auto nodes = editor_.find("nodes");
  if (nodes == editor_.end() || !nodes->is_object()) return nullptr;
  auto it = nodes->find(id);
  return it == nodes->end() ? json(nullptr) : *it;
}

std::vector<std::string> GraphDocument::sink_nodes() const {
  std::set<std::string> consumed;
  for (const Node& n : nodes_) {
    for (const auto& [port, link] : n.inputs) consumed.insert(link.node);
  }
  std::vector<std::string> out;
  for (const Node& n : nodes_) {
    if (!consumed.count(n.id)) out.push_back(n.id);
  }
  return out;
}

bool GraphDocument::reaches(const std::string& from, const std::string& target) const {
  // Follows input links upstream from `from`: true when `target` is `from` or one of its ancestors.
  std::set<std::string> seen;
  std::vector<std::string> todo{from};
  while (!todo.empty()) {
    std::string id = todo.back();
    todo.pop_back();
    if (id == target) return true;
    if (!seen.insert(id).second) continue;
    if (const Node* n = find_node(id)) {
      for (const auto& [port, link] : n->inputs) todo.push_back(link.node);
    }
  }
  return false;
}

Status GraphDocument::check_link_types(const std::string& to_node, const std::string& input,
                                       const InputLink& from) const {
  if (!registry_) return {};
  const Node* dst = find_node(to_node);
  const Node* src = find_node(from.node);
  const NodeType* dst_type = dst ? registry_->find(dst->type) : nullptr;
  const NodeType* src_type = src ? registry_->find(src->type) : nullptr;
  const PortSpec* in = dst_type ? dst_type->find_input(input) : nullptr;
  const PortSpec* out = src_type ? src_type->find_output(from.output) : nullptr;
  if (dst_type && !in) {
    return Error{to_node, "node type '" + dst_type->name + "' has no input '" + input + "'"};
  }
  if (src_type && !out) {
    return Error{to_node, "node '" + from.node + "' (" + src_type->name + ") has no output '" + from.output + "'"};
  }
  if (in && out && !value_types_compatible(out->type, in->type)) {
    return Error{to_node, "input '" + input + "' takes " + in->type + " but output '" + from.node + "." +
                              from.output + "' gives " + out->type + "; connect an output of type " + in->type};
  }
  return {};
}

Status GraphDocument::can_add_node(const Node& node) const {
  if (!is_valid_node_id(node.id)) return Error{node.id, invalid_id_message(node.id)};
  if (find_node(node.id)) {
    return Error{node.id, "a node with id '" + node.id + "' already exists; choose another id"};
  }
  if (node.type.empty()) return Error{node.id, "the node has no type"};
  for (const auto& [port, link] : node.inputs) {
    if (link.node == node.id) return Error{node.id, "input '" + port + "' is linked to its own node"};
    if (!find_node(link.node)) {
      return Error{node.id, "input '" + port + "' is linked to node '" + link.node + "', which does not exist"};
    }
  }
  return {};
}

Status GraphDocument::can_connect(const std::string& to_node, const std::string& input, const InputLink& from) const {
  const Node* dst = find_node(to_node);
  if (!dst) return Error{to_node, "there is no node '" + to_node + "'"};
  if (!find_node(from.node)) return Error{to_node, "there is no node '" + from.node + "' to connect from"};
  if (input.empty() || from.output.empty()) return Error{to_node, "a link needs an input and an output port name"};
  if (from.node == to_node) return Error{to_node, "a node cannot be linked to itself"};
  auto existing = dst->inputs.find(input);
  if (existing != dst->inputs.end()) {
    return Error{to_node, "input '" + input + "' is already connected to '" + existing->second.node + "." +
                              existing->second.output + "'; disconnect it first"};
  }
  if (reaches(from.node, to_node)) {
    return Error{to_node, "connecting '" + from.node + "' to '" + to_node + "' would create a cycle"};
  }
  return check_link_types(to_node, input, from);
}

std::string GraphDocument::unique_node_id(const std::string& base) const {
  std::string clean;
  for (char c : base) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    clean += ok ? c : '_';
  }
  if (clean.empty()) clean = "node";
  if (clean.size() > 56) clean.resize(56);
  if (!find_node(clean)) return clean;
  for (int i = 2;; ++i) {
    std::string candidate = clean + "_" + std::to_string(i);
    if (!find_node(candidate)) return candidate;
  }
}

int GraphDocument::subscribe(Observer observer) {
  const int id = next_observer_++;
  observers_.emplace(id, std::move(observer));
  return id;
}

void GraphDocument::unsubscribe(int subscription) { observers_.erase(subscription); }

void GraphDocument::notify(ChangeKind kind, const std::string& node_id, const std::string& old_id,
                           const std::string& port) const {
  if (observers_.empty()) return;
  const DocumentChange change{kind, node_id, old_id, port};
  auto copy = observers_;  // an observer may unsubscribe itself
  for (const auto& [id, fn] : copy) fn(change);
}

}  // namespace vidgraph::engine
