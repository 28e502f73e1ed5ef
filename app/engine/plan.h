// Execution planning: which nodes a run needs, in which order.
//
// plan_execution returns the targets and all their ancestors (through input links), topologically
// sorted (every node after its sources), ties broken by document order. Empty targets = the sink
// nodes. Errors: an unknown target id, or a cycle (naming a node on it).
#pragma once

#include <string>
#include <vector>

#include "document.h"
#include "result.h"

namespace vidgraph::engine {

Result<std::vector<std::string>> plan_execution(const GraphDocument& doc, const std::vector<std::string>& targets);

// A node id on a cycle of the document's links, or "" when there is none.
std::string find_cycle_node(const GraphDocument& doc);

}  // namespace vidgraph::engine
