// Undoable document edits (see operations.h). Each class applies one edit and builds its inverse.
#include "operations.h"

#include <map>
#include <set>

namespace vidgraph::engine {

using nlohmann::json;

namespace {

using OpResult = Result<OperationPtr>;

class CompositeOp final : public Operation {
 public:
  CompositeOp(std::string description, std::vector<OperationPtr> parts)
      : description_(std::move(description)), parts_(std::move(parts)) {}

  OpResult apply(GraphDocument& doc) const override {
    std::vector<OperationPtr> inverses;
    for (const auto& part : parts_) {
      auto r = part->apply(doc);
      if (!r.ok()) {
        for (auto it = inverses.rbegin(); it != inverses.rend(); ++it) (void)(*it)->apply(doc);
        return r.error();
      }
      inverses.push_back(std::move(r.value()));
    }
    std::vector<OperationPtr> reversed;
    for (auto it = inverses.rbegin(); it != inverses.rend(); ++it) reversed.push_back(std::move(*it));
    return OperationPtr(std::make_unique<CompositeOp>(description_, std::move(reversed)));
  }
  std::string description() const override { return description_; }
  OperationPtr clone() const override {
    std::vector<OperationPtr> copies;
    for (const auto& p : parts_) copies.push_back(p->clone());
    return std::make_unique<CompositeOp>(description_, std::move(copies));
  }

 private:
  std::string description_;
  std::vector<OperationPtr> parts_;
};

class SetLayoutOp final : public Operation {
 public:
  SetLayoutOp(std::string id, json layout) : id_(std::move(id)), layout_(std::move(layout)) {}
  OpResult apply(GraphDocument& doc) const override {
    auto old = doc.set_node_editor(id_, layout_);
    if (!old.ok()) return old.error();
    return OperationPtr(std::make_unique<SetLayoutOp>(id_, std::move(old.value())));
  }
  std::string description() const override { return "Change layout of '" + id_ + "'"; }
  std::string merge_key() const override { return "layout:" + id_; }
  bool merge_with(const Operation& later) override {
    auto* o = dynamic_cast<const SetLayoutOp*>(&later);
    if (!o || o->id_ != id_) return false;
    layout_ = o->layout_;
    return true;
  }
  OperationPtr clone() const override { return std::make_unique<SetLayoutOp>(*this); }

 private:
  std::string id_;
  json layout_;
};

class SetEditorEntryOp final : public Operation {
 public:
  SetEditorEntryOp(std::string key, json value) : key_(std::move(key)), value_(std::move(value)) {}
  OpResult apply(GraphDocument& doc) const override {
    if (key_ == "nodes" || key_.empty()) return make_error("editor entry '" + key_ + "' is not document-wide state");
    json state = doc.editor();
    json old = state.contains(key_) ? state[key_] : json(nullptr);
    if (value_.is_null()) state.erase(key_);
    else state[key_] = value_;
    doc.set_editor_state(std::move(state));
    return OperationPtr(std::make_unique<SetEditorEntryOp>(key_, std::move(old)));
  }
  std::string description() const override { return "Change editor " + key_; }
  OperationPtr clone() const override { return std::make_unique<SetEditorEntryOp>(*this); }

 private:
  std::string key_;
  json value_;
};

class SetBypassOp final : public Operation {
 public:
  SetBypassOp(std::string id, bool bypass) : id_(std::move(id)), bypass_(bypass) {}
  OpResult apply(GraphDocument& doc) const override {
    auto old = doc.set_bypass(id_, bypass_);
    if (!old.ok()) return old.error();
    return OperationPtr(std::make_unique<SetBypassOp>(id_, old.value()));
  }
  std::string description() const override { return (bypass_ ? "Bypass '" : "Stop bypassing '") + id_ + "'"; }
  OperationPtr clone() const override { return std::make_unique<SetBypassOp>(*this); }

 private:
  std::string id_;
  bool bypass_;
};

class MoveOp final : public Operation {
 public:
  MoveOp(std::string id, double x, double y) : id_(std::move(id)), x_(x), y_(y) {}
  OpResult apply(GraphDocument& doc) const override {
    json layout = doc.node_editor(id_);
    if (!layout.is_object()) layout = json::object();
    layout["pos"] = json::array({x_, y_});
    return SetLayoutOp(id_, std::move(layout)).apply(doc);
  }
  std::string description() const override { return "Move '" + id_ + "'"; }
  std::string merge_key() const override { return "move:" + id_; }
  bool merge_with(const Operation& later) override {
    auto* o = dynamic_cast<const MoveOp*>(&later);
    if (!o || o->id_ != id_) return false;
    x_ = o->x_;
    y_ = o->y_;
    return true;
  }
  OperationPtr clone() const override { return std::make_unique<MoveOp>(*this); }

 private:
  std::string id_;
  double x_, y_;
};

class ConnectOp;

class DisconnectOp final : public Operation {
 public:
  DisconnectOp(std::string to, std::string input) : to_(std::move(to)), input_(std::move(input)) {}
  OpResult apply(GraphDocument& doc) const override;
  std::string description() const override { return "Disconnect '" + to_ + "." + input_ + "'"; }
  OperationPtr clone() const override { return std::make_unique<DisconnectOp>(*this); }

 private:
  std::string to_, input_;
};

class ConnectOp final : public Operation {
 public:
  ConnectOp(std::string to, std::string input, InputLink from)
      : to_(std::move(to)), input_(std::move(input)), from_(std::move(from)) {}
  OpResult apply(GraphDocument& doc) const override {
    if (auto s = doc.connect(to_, input_, from_); !s) return s.error();
    return OperationPtr(std::make_unique<DisconnectOp>(to_, input_));
  }
  std::string description() const override {
    return "Connect '" + from_.node + "." + from_.output + "' to '" + to_ + "." + input_ + "'";
  }
  OperationPtr clone() const override { return std::make_unique<ConnectOp>(*this); }

 private:
  std::string to_, input_;
  InputLink from_;
};

OpResult DisconnectOp::apply(GraphDocument& doc) const {
  auto old = doc.disconnect(to_, input_);
  if (!old.ok()) return old.error();
  return OperationPtr(std::make_unique<ConnectOp>(to_, input_, old.value()));
}

class RemoveNodeOp;

class AddNodeOp final : public Operation {
 public:
  AddNodeOp(Node node, std::size_t index, json layout)
      : node_(std::move(node)), index_(index), layout_(std::move(layout)) {}
  OpResult apply(GraphDocument& doc) const override;
  std::string description() const override { return "Add node '" + node_.id + "'"; }
  OperationPtr clone() const override { return std::make_unique<AddNodeOp>(*this); }

 private:
  Node node_;
  std::size_t index_;
  json layout_;
};

class RemoveNodeOp final : public Operation {
 public:
  explicit RemoveNodeOp(std::string id) : id_(std::move(id)) {}
  OpResult apply(GraphDocument& doc) const override {
    const std::size_t index = doc.index_of(id_);
    if (index == GraphDocument::npos) return Error{id_, "there is no node '" + id_ + "' to remove"};
    const json layout = doc.node_editor(id_);
    std::vector<OperationPtr> reconnects;
    for (const Link& l : doc.links_from(id_)) {
      auto inv = DisconnectOp(l.to_node, l.to_input).apply(doc);
      if (!inv.ok()) {
        for (auto it = reconnects.rbegin(); it != reconnects.rend(); ++it) (void)(*it)->apply(doc);
        return inv.error();
      }
      reconnects.push_back(std::move(inv.value()));
    }
    auto removed = doc.remove_node(id_);
    if (!removed.ok()) {
      for (auto it = reconnects.rbegin(); it != reconnects.rend(); ++it) (void)(*it)->apply(doc);
      return removed.error();
    }
    std::vector<OperationPtr> undo;
    undo.push_back(std::make_unique<AddNodeOp>(std::move(removed.value()), index, layout));
    for (auto& r : reconnects) undo.push_back(std::move(r));
    return OperationPtr(std::make_unique<CompositeOp>("Restore node '" + id_ + "'", std::move(undo)));
  }
  std::string description() const override { return "Remove node '" + id_ + "'"; }
  OperationPtr clone() const override { return std::make_unique<RemoveNodeOp>(*this); }

 private:
  std::string id_;
};

OpResult AddNodeOp::apply(GraphDocument& doc) const {
  if (auto s = doc.add_node(node_, index_); !s) return s.error();
  if (!layout_.is_null()) (void)doc.set_node_editor(node_.id, layout_);
  return OperationPtr(std::make_unique<RemoveNodeOp>(node_.id));
}

class RenameOp final : public Operation {
 public:
  RenameOp(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  OpResult apply(GraphDocument& doc) const override {
    if (auto s = doc.rename_node(from_, to_); !s) return s.error();
    return OperationPtr(std::make_unique<RenameOp>(to_, from_));
  }
  std::string description() const override { return "Rename '" + from_ + "' to '" + to_ + "'"; }
  OperationPtr clone() const override { return std::make_unique<RenameOp>(*this); }

 private:
  std::string from_, to_;
};

class SetParamOp final : public Operation {
 public:
  SetParamOp(std::string id, std::string param, json value)
      : id_(std::move(id)), param_(std::move(param)), value_(std::move(value)) {}
  OpResult apply(GraphDocument& doc) const override {
    auto old = doc.set_param(id_, param_, value_);
    if (!old.ok()) return old.error();
    return OperationPtr(std::make_unique<SetParamOp>(id_, param_, std::move(old.value())));
  }
  std::string description() const override { return "Set '" + id_ + "." + param_ + "'"; }
  std::string merge_key() const override { return "param:" + id_ + "." + param_; }
  bool merge_with(const Operation& later) override {
    auto* o = dynamic_cast<const SetParamOp*>(&later);
    if (!o || o->id_ != id_ || o->param_ != param_) return false;
    value_ = o->value_;
    return true;
  }
  OperationPtr clone() const override { return std::make_unique<SetParamOp>(*this); }

 private:
  std::string id_, param_;
  json value_;
};

class SetNodeDataOp final : public Operation {
 public:
  SetNodeDataOp(std::string id, int version, json params)
      : id_(std::move(id)), version_(version), params_(std::move(params)) {}
  OpResult apply(GraphDocument& doc) const override {
    const Node* n = doc.find_node(id_);
    if (!n) return Error{id_, "there is no node '" + id_ + "'"};
    auto inverse = std::make_unique<SetNodeDataOp>(id_, n->type_version, n->params);
    if (auto s = doc.set_node_data(id_, version_, params_); !s) return s.error();
    return OperationPtr(std::move(inverse));
  }
  std::string description() const override { return "Upgrade node '" + id_ + "'"; }
  OperationPtr clone() const override { return std::make_unique<SetNodeDataOp>(*this); }

 private:
  std::string id_;
  int version_;
  json params_;
};

}  // namespace

OperationPtr make_add_node(Node node, std::size_t index, json layout) {
  return std::make_unique<AddNodeOp>(std::move(node), index, std::move(layout));
}
OperationPtr make_remove_node(std::string id) { return std::make_unique<RemoveNodeOp>(std::move(id)); }
OperationPtr make_connect(std::string to_node, std::string input, InputLink from) {
  return std::make_unique<ConnectOp>(std::move(to_node), std::move(input), std::move(from));
}
OperationPtr make_disconnect(std::string to_node, std::string input) {
  return std::make_unique<DisconnectOp>(std::move(to_node), std::move(input));
}
OperationPtr make_rename_node(std::string old_id, std::string new_id) {
  return std::make_unique<RenameOp>(std::move(old_id), std::move(new_id));
}
OperationPtr make_set_param(std::string node_id, std::string param, json value) {
  return std::make_unique<SetParamOp>(std::move(node_id), std::move(param), std::move(value));
}
OperationPtr make_set_node_data(std::string node_id, int type_version, json params) {
  return std::make_unique<SetNodeDataOp>(std::move(node_id), type_version, std::move(params));
}
OperationPtr make_set_node_layout(std::string node_id, json layout) {
  return std::make_unique<SetLayoutOp>(std::move(node_id), std::move(layout));
}
OperationPtr make_set_editor_entry(std::string key, json value) {
  return std::make_unique<SetEditorEntryOp>(std::move(key), std::move(value));
}
OperationPtr make_set_bypass(std::string node_id, bool bypass) {
  return std::make_unique<SetBypassOp>(std::move(node_id), bypass);
}
OperationPtr make_move_node(std::string node_id, double x, double y) {
  return std::make_unique<MoveOp>(std::move(node_id), x, y);
}
std::optional<std::array<double, 2>> layout_position(const json& layout) {
  if (!layout.is_object() || !layout.contains("pos")) return std::nullopt;
  const json& pos = layout["pos"];
  if (!pos.is_array() || pos.size() != 2 || !pos[0].is_number() || !pos[1].is_number()) return std::nullopt;
  return std::array<double, 2>{pos[0].get<double>(), pos[1].get<double>()};
}

OperationPtr make_composite(std::string description, std::vector<OperationPtr> parts) {
  return std::make_unique<CompositeOp>(std::move(description), std::move(parts));
}

OperationPtr make_remove_nodes(const GraphDocument& doc, const std::vector<std::string>& ids) {
  std::vector<OperationPtr> parts;
  for (const auto& id : ids) {
    if (doc.find_node(id)) parts.push_back(make_remove_node(id));
  }
  const std::string what = parts.size() == 1 ? "Remove node '" + ids.front() + "'"
                                             : "Remove " + std::to_string(parts.size()) + " nodes";
  return make_composite(what, std::move(parts));
}

std::map<std::string, std::string> paste_ids(const GraphDocument& doc, const std::vector<Node>& nodes) {
  std::map<std::string, std::string> renamed;
  GraphDocument scratch(doc);
  scratch.set_registry(nullptr);
  for (const Node& n : nodes) {
    const std::string fresh = scratch.unique_node_id(n.id);
    renamed[n.id] = fresh;
    Node placeholder;
    placeholder.id = fresh;
    placeholder.type = "placeholder";
    (void)scratch.add_node(std::move(placeholder));
  }
  return renamed;
}

OperationPtr make_paste(const GraphDocument& doc, std::vector<Node> nodes, const json& layouts, double offset_x,
                        double offset_y) {
  std::map<std::string, std::string> renamed = paste_ids(doc, nodes);
  std::vector<OperationPtr> adds, connects;
  for (Node& n : nodes) {
    const std::string original = n.id;
    std::map<std::string, InputLink> inputs;
    for (auto& [port, link] : n.inputs) {
      auto it = renamed.find(link.node);
      if (it != renamed.end()) {
        connects.push_back(make_connect(renamed[original], port, InputLink{it->second, link.output}));
      } else if (doc.find_node(link.node)) {
        inputs[port] = link;
      }
    }
    n.id = renamed[original];
    n.inputs = std::move(inputs);
    json layout = layouts.is_object() && layouts.contains(original) ? layouts[original] : json(nullptr);
    if (const auto pos = layout_position(layout)) layout["pos"] = json::array({(*pos)[0] + offset_x, (*pos)[1] + offset_y});
    adds.push_back(make_add_node(std::move(n), GraphDocument::npos, std::move(layout)));
  }
  for (auto& c : connects) adds.push_back(std::move(c));
  const std::size_t count = nodes.size();
  return make_composite("Paste " + std::to_string(count) + (count == 1 ? " node" : " nodes"), std::move(adds));
}

}  // namespace vidgraph::engine
