// GraphDocument: the semantic graph a workflow file holds (nodes, params, links), plus the editor's
// layout kept apart, plus unknown keys kept verbatim.
//
// Invariants, enforced by every edit (an edit that would break one changes nothing and returns an
// Error whose message says why):
//   - node ids are valid (is_valid_node_id) and unique;
//   - every link names an existing node (no dangling links) and is not a self-link;
//   - an input has at most one link (inputs are a map port → link);
//   - links form no cycle;
//   - when a registry is set and both node types are known: the ports exist and their value types
//     are compatible (value_types_compatible). Nodes of unknown types accept any port name.
// Nodes keep document order (the order of the file). Observers are called synchronously after each
// successful edit, on the editing thread. Copying a document copies its content, not its observers.
// Not thread-safe: the engine runs on a copy (a snapshot), so the GUI may keep editing during a run.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "result.h"

namespace vidgraph::engine {

class Registry;

struct InputLink {
  std::string node;    // source node id
  std::string output;  // source output port
  bool operator==(const InputLink& o) const { return node == o.node && output == o.output; }
  bool operator!=(const InputLink& o) const { return !(*this == o); }
};

struct Node {
  std::string id;
  std::string type;
  int type_version = 1;
  nlohmann::json params = nlohmann::json::object();
  std::map<std::string, InputLink> inputs;          // input port → source
  bool bypass = false;  // the node does not run: its outputs pass its inputs through (see bypass.h)
  nlohmann::json extra = nlohmann::json::object();  // unknown per-node keys, written back unchanged
};

// One link seen from both ends.
struct Link {
  std::string from_node;
  std::string from_output;
  std::string to_node;
  std::string to_input;
};

enum class ChangeKind {
  NodeAdded,      // node_id
  NodeRemoved,    // node_id
  NodeRenamed,    // old_node_id → node_id
  LinkAdded,      // node_id = consumer, port = its input
  LinkRemoved,    // node_id = consumer, port = its input
  ParamChanged,   // node_id, port = param name
  NodeUpdated,    // node_id: type version and params replaced (type upgrade)
  EditorChanged,  // node_id (empty = document-wide editor state)
  Reset           // everything may have changed (load, assignment)
};

struct DocumentChange {
  ChangeKind kind;
  std::string node_id;
  std::string old_node_id;
  std::string port;
};

// Ids: 1-64 characters from [A-Za-z0-9_-] (no dots: `--set NODE.PARAM=VALUE` splits on the first '.').
bool is_valid_node_id(const std::string& id);
// A subgraph path "a/b/c" of valid ids (subgraph.h): the ids of an expanded document, and what
// `--set` accepts.
bool is_valid_node_path(const std::string& id);

class GraphDocument {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  using Observer = std::function<void(const DocumentChange&)>;

  GraphDocument() = default;
  explicit GraphDocument(const Registry* registry) : registry_(registry) {}
  GraphDocument(const GraphDocument& other);
  GraphDocument& operator=(const GraphDocument& other);  // notifies Reset
  GraphDocument(GraphDocument&& other) noexcept;
  GraphDocument& operator=(GraphDocument&& other) noexcept;  // notifies Reset
  ~GraphDocument() = default;

  // Builds a document from parts, checking the structural invariants (ids, dangling links, cycles)
  // but not port names or types (validation reports those). Used by the workflow loader.
  // `node_paths`: ids may be subgraph paths "instance/inner" (an expanded document, subgraph.h).
  static Result<GraphDocument> build(std::vector<Node> nodes, nlohmann::json editor = nlohmann::json::object(),
                                     nlohmann::json extra = nlohmann::json::object(),
                                     const Registry* registry = nullptr, bool node_paths = false);

  void set_registry(const Registry* registry) { registry_ = registry; }
  const Registry* registry() const { return registry_; }

  // ---- reads
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node* find_node(const std::string& id) const;
  std::size_t index_of(const std::string& id) const;  // npos when absent
  std::vector<Link> links() const;                     // in document order of the consumers
  std::vector<Link> links_from(const std::string& node_id) const;  // consumers of the node's outputs
  const nlohmann::json& editor() const { return editor_; }
  // editor()["nodes"][id], or null.
  nlohmann::json node_editor(const std::string& id) const;
  const nlohmann::json& extra() const { return extra_; }  // unknown top-level keys of the file
  // Nodes whose outputs no other node consumes.
  std::vector<std::string> sink_nodes() const;

  // ---- checks that change nothing
  Status can_add_node(const Node& node) const;
  Status can_connect(const std::string& to_node, const std::string& input, const InputLink& from) const;
  // `base` if free, else base_2, base_3, ... (base is sanitised into a valid id first).
  std::string unique_node_id(const std::string& base) const;

  // ---- edits (check, then change and notify; on failure nothing changes)
  // Adds a node (its `inputs` must already satisfy the invariants) at `index` (npos = end).
  Status add_node(Node node, std::size_t index = npos);
  // Removes a node and its own input links; refused while other nodes consume its outputs.
  Result<Node> remove_node(const std::string& id);
  Status connect(const std::string& to_node, const std::string& input, const InputLink& from);
  // Returns the removed link; an error when the input is not connected.
  Result<InputLink> disconnect(const std::string& to_node, const std::string& input);
  // Renames a node, rewriting every link to it and its editor entry.
  Status rename_node(const std::string& old_id, const std::string& new_id);
  // Sets one param (null value = remove it) and returns the previous value (null when absent). When
  // the registry knows the type, the value must have the param's JSON type (ranges are checked by
  // validation, so a GUI can show an out-of-range value as an error instead of losing it).
  Result<nlohmann::json> set_param(const std::string& id, const std::string& param, nlohmann::json value);
  // Sets a node's bypass flag (ChangeKind::NodeUpdated); returns the previous one.
  Result<bool> set_bypass(const std::string& id, bool bypass);
  // Replaces a node's type version and whole params object (node-type upgrades).
  Status set_node_data(const std::string& id, int type_version, nlohmann::json params);
  // Sets editor()["nodes"][id] (null removes it); returns the previous value.
  Result<nlohmann::json> set_node_editor(const std::string& id, nlohmann::json layout);
  // Replaces the document-wide editor state except the "nodes" entry (viewport, groups, ...).
  void set_editor_state(nlohmann::json state);
  void set_extra(nlohmann::json extra);
  void clear();

  // ---- observers
  int subscribe(Observer observer);
  void unsubscribe(int subscription);

 private:
  void notify(ChangeKind kind, const std::string& node_id, const std::string& old_id = {},
              const std::string& port = {}) const;
  Node* find_mutable(const std::string& id);
  void reindex();  // rebuilds index_ after nodes_ changed shape (add, remove, rename, assign)
  bool reaches(const std::string& from, const std::string& target) const;  // path from → target
  Status check_link_types(const std::string& to_node, const std::string& input, const InputLink& from) const;

  const Registry* registry_ = nullptr;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, std::size_t> index_;  // id → position in nodes_
  nlohmann::json editor_ = nlohmann::json::object();
  nlohmann::json extra_ = nlohmann::json::object();
  std::map<int, Observer> observers_;
  int next_observer_ = 1;
};

}  // namespace vidgraph::engine
