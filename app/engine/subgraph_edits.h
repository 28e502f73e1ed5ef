// Undoable subgraph edits (operations.h): make a subgraph from a selection, unpack an instance,
// expose and unexpose a param. Each is one undo step; preparing one checks the document and says
// what is wrong before anything changes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operations.h"
#include "subgraph.h"

namespace vidgraph::engine {

// Sets the definition `id` under the document's "subgraphs" (null removes it). Inverse: the
// previous definition.
OperationPtr make_set_subgraph(std::string id, nlohmann::json definition);

// Moves the nodes `ids` into a new definition named `name` and puts one instance in their place:
// each outside source that fed the selection becomes an exposed input (named after the first
// inner port it feeds), each inner output read outside an exposed output (named after the port),
// and the instance is wired to them as the nodes were. `instance_id` (out) is the new node's id.
Result<OperationPtr> make_subgraph_from(const GraphDocument& doc, const std::vector<std::string>& ids,
                                        const std::string& name, std::string* instance_id = nullptr);

// Replaces the instance by its inner nodes (fresh ids where they clash), wired as the instance
// was and with its param values; the definition is removed when no other instance uses it.
Result<OperationPtr> make_unpack_subgraph(const GraphDocument& doc, const std::string& instance_id);

// Adds to a definition's JSON the exposure of `inner` as `name`, refusing a name the definition uses
// already (or "subgraph"); the caller has checked that `inner` names a param of an inner node.
Status add_exposed_param(nlohmann::json& definition, const std::string& name, const InnerParam& inner);
// Exposes the inner param `inner` of definition `id` as `name`, which instances then set.
Result<OperationPtr> make_expose_param(const GraphDocument& doc, const std::string& id, const std::string& name,
                                       const InnerParam& inner);
// Stops exposing `name`; the instances' values of it are removed in the same step.
Result<OperationPtr> make_unexpose_param(const GraphDocument& doc, const std::string& id, const std::string& name);

}  // namespace vidgraph::engine
