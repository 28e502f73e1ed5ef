// The node-type registry: every type a document may use, looked up by name.
//
// Contract: fill it at start-up (built-in nodes, then plugins), then share it read-only; add() is not
// safe to call while an Engine is running with this registry. Names are unique case-insensitively;
// find() is case-insensitive. add() refuses an inconsistent descriptor (empty name, no compute,
// duplicate port or param names, a default that fails its own spec) with the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node_type.h"
#include "result.h"

namespace vidgraph::engine {

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Status add(NodeType type);
  const NodeType* find(const std::string& name) const;  // case-insensitive; nullptr if unknown
  std::size_t size() const;

  // All types sorted by category, then name.
  std::vector<const NodeType*> list() const;
  // Types of one category (exact, case-insensitive), sorted by name.
  std::vector<const NodeType*> list_category(const std::string& category) const;
  // Distinct categories, sorted.
  std::vector<std::string> categories() const;
  // {"node_types": [describe_node_type(...), ...]} in list() order.
  nlohmann::json describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vidgraph::engine
