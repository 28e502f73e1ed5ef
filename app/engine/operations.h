// Undoable document edits. Every edit is an Operation: apply() performs it on a document and, on
// success, returns the operation that undoes it (its inverse); on failure it changes nothing and
// returns the reason. Composite operations (paste, delete selection) apply their parts in order and
// roll back the applied parts if one fails.
//
// GUI contract (QUndoStack wraps these 1:1): on a user action, call apply() → keep {redo = the
// operation, undo = the returned inverse}. Undo applies `undo` (and stores its inverse as the new
// redo, or reuses the original). Param drags merge: when merge_key() of two consecutive redo
// operations is equal and non-empty, call `first_redo.merge_with(second_redo)`; the first command's
// undo stays as it was, so one undo restores the value from before the drag.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document.h"
#include "result.h"

namespace vidgraph::engine {

class Operation {
 public:
  virtual ~Operation() = default;
  // Applies to `doc`; returns the inverse on success.
  virtual Result<std::unique_ptr<Operation>> apply(GraphDocument& doc) const = 0;
  // Human-readable, for the Edit menu: "Add node 'sampler'".
  virtual std::string description() const = 0;
  // Non-empty for mergeable edits (same key = same target); see the header comment.
  virtual std::string merge_key() const { return {}; }
  // Absorbs `later` (same merge_key) so that applying this equals applying both. Returns false
  // (and changes nothing) when they cannot merge.
  virtual bool merge_with(const Operation& later) { (void)later; return false; }
  virtual std::unique_ptr<Operation> clone() const = 0;
};

using OperationPtr = std::unique_ptr<Operation>;

// Adds `node` (with its input links) at `index` (npos = end). Inverse: remove it.
OperationPtr make_add_node(Node node, std::size_t index = GraphDocument::npos,
                           nlohmann::json layout = nullptr);
// Removes a node, first removing the links that consume its outputs. Inverse restores the node at
// its index, its editor layout and those links.
OperationPtr make_remove_node(std::string id);
OperationPtr make_connect(std::string to_node, std::string input, InputLink from);
OperationPtr make_disconnect(std::string to_node, std::string input);
OperationPtr make_rename_node(std::string old_id, std::string new_id);
// value null = remove the param (falls back to the default). Mergeable per (node, param).
OperationPtr make_set_param(std::string node_id, std::string param, nlohmann::json value);
// Replaces type version + params (the "upgrade node" action).
OperationPtr make_set_node_data(std::string node_id, int type_version, nlohmann::json params);
// Sets a node's bypass flag. Inverse: the previous flag.
OperationPtr make_set_bypass(std::string node_id, bool bypass);
// Sets editor()["nodes"][id] wholesale (position, size, collapsed...). Mergeable per node (drags).
OperationPtr make_set_node_layout(std::string node_id, nlohmann::json layout);
// Sets editor()[key], document-wide editor state such as "groups" ("nodes" is refused; null value
// removes the key). Inverse: the previous value. Never merges.
OperationPtr make_set_editor_entry(std::string key, nlohmann::json value);
// A node layout's "pos" [x, y], when it has one of two numbers.
std::optional<std::array<double, 2>> layout_position(const nlohmann::json& layout);
// Moves a node: sets its layout's "pos" to [x, y], keeping the rest. Mergeable per node.
OperationPtr make_move_node(std::string node_id, double x, double y);
// Applies `parts` in order as one step; rolls back if one fails.
OperationPtr make_composite(std::string description, std::vector<OperationPtr> parts);

// Helpers built on the above.
// Removes several nodes (links between them and to the rest included) as one step.
OperationPtr make_remove_nodes(const GraphDocument& doc, const std::vector<std::string>& ids);
// Pastes `nodes` (e.g. from clipboard JSON): ids that clash get fresh ones (links among the pasted
// nodes follow), links to nodes outside the paste are kept only when the source node exists in
// `doc`. `layouts` maps original id → layout (may be null).
OperationPtr make_paste(const GraphDocument& doc, std::vector<Node> nodes, const nlohmann::json& layouts,
                        double offset_x = 0.0, double offset_y = 0.0);
// The ids make_paste gives `nodes` in `doc`: original id -> fresh id (unique against the document
// and against each other), for editor state that names the pasted nodes.
std::map<std::string, std::string> paste_ids(const GraphDocument& doc, const std::vector<Node>& nodes);

}  // namespace vidgraph::engine
