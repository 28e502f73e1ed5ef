// Validation before a run: every problem that would make a run fail for a reason visible in the
// document alone, each naming its node and what to do.
//
// Checks (errors): unknown node types; node type versions newer than the registered type; missing
// required inputs; links to unknown ports or from unknown outputs; value-type mismatches; cycles;
// params of the wrong JSON type, out of [min, max], or not among the enum choices; "{output}/…" paths
// that name the output folder itself or leave it through ".."; unknown node ids in
// the run targets. Warnings: params the type does not declare (kept, ignored), nodes of an older type
// version with no upgrade hook.
// With `targets` non-empty only those nodes and their ancestors are checked (the rest cannot affect
// the run); empty = the whole document.
#pragma once

#include <string>
#include <vector>

#include "document.h"
#include "registry.h"
#include "result.h"

namespace vidgraph::engine {

struct ValidationReport {
  std::vector<Error> errors;
  std::vector<Error> warnings;
  // With targets: the nodes they need in run order (plan_execution), the scope that was checked;
  // the engine runs this plan instead of building it again. Empty without targets.
  std::vector<std::string> plan;
  bool ok() const { return errors.empty(); }
};

ValidationReport validate_document(const GraphDocument& doc, const Registry& registry,
                                   const std::vector<std::string>& targets = {});

// Runs each node's upgrade hook when its type_version is older than the registered version
// (on `doc` itself: call it on a copy for runs, or wrap it in operations for the GUI). Returns the ids
// of the upgraded nodes, or the first upgrade error.
Result<std::vector<std::string>> upgrade_node_types(GraphDocument& doc, const Registry& registry);

}  // namespace vidgraph::engine
