// Bypassed nodes (Node::bypass, the workflow file's per-node "bypass": true).
//
// Contract: a bypassed node does not run. Each of its outputs passes through the first connected
// input (in declaration order) whose port has the same value type (or "*" on either side); an output
// another node reads that has no such input is a validation error naming both. A bypassed node that
// no other node reads (an export, a preview) is muted: it is not one of the run's default targets,
// so what only it needs does not run either. Params of a bypassed node are not checked or used; its
// inputs' sources still run when the node is planned (another node reads it).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "document.h"
#include "node_type.h"

namespace vidgraph::engine {

// Output port → the connected input port it passes through, for the outputs that have one.
std::map<std::string, std::string> bypass_routes(const Node& node, const NodeType& type);

// The run's default targets: the sink nodes that are not bypassed.
std::vector<std::string> default_targets(const GraphDocument& doc);

}  // namespace vidgraph::engine
