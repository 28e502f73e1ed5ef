// Subgraphs: a node whose body is a graph. A workflow keeps the definitions under its top-level
// key "subgraphs" (GraphDocument::extra(), by id); an instance is a node of type "Subgraph" whose
// param "subgraph" names its definition, whose other params set the params the definition exposes,
// and whose inputs and outputs are the definition's exposed ones:
//
//   "subgraphs": {"<definition id>": {
//       "name": "Decode and export",
//       "nodes": [<inner nodes, as in "nodes">],
//       "inputs":  {"<name>": [{"node": "<inner id>", "input": "<port>"}, ...]},   // feeds one or more
//       "outputs": {"<name>": {"node": "<inner id>", "output": "<port>"}},
//       "params":  {"<name>": {"node": "<inner id>", "param": "<param>"}},
//       "editor":  {<the inner graph's layout>}}}
//
// Definitions nest (an inner node may be an instance) up to kMaxSubgraphDepth levels. A run expands
// every instance into its inner nodes before validation (overrides.h does it): ids become paths
// "<instance>/<inner>" ("a/b/c" when nested), so planning, caching per inner node, events and
// `--set NODE/INNER.PARAM` see ordinary nodes; an instance param left unset keeps the inner
// node's own value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document.h"
#include "node_type.h"
#include "registry.h"
#include "result.h"

namespace vidgraph::engine {

inline constexpr const char* kSubgraphType = "Subgraph";
inline constexpr const char* kSubgraphsKey = "subgraphs";
inline constexpr const char* kSubgraphParam = "subgraph";  // the instance param naming its definition
inline constexpr int kMaxSubgraphDepth = 16;

// An inner input an exposed input feeds.
struct InnerInput {
  std::string node;
  std::string input;
};
// An inner param an exposed param sets.
struct InnerParam {
  std::string node;
  std::string param;
};

struct SubgraphDefinition {
  std::string id;
  std::string name;
  std::vector<Node> nodes;
  std::map<std::string, std::vector<InnerInput>> inputs;
  std::map<std::string, InputLink> outputs;
  std::map<std::string, InnerParam> params;
  nlohmann::json editor = nlohmann::json::object();
};

// The ids of the document's definitions, sorted.
std::vector<std::string> subgraph_ids(const GraphDocument& doc);
// The definition id an instance names in its param "subgraph" ("" when it names none).
std::string instance_subgraph(const Node& instance);

// The definition `id` of `doc`, checked: its nodes parse and are a valid graph, every exposed port
// and param names an inner node. The error says what is wrong and where.
Result<SubgraphDefinition> find_subgraph(const GraphDocument& doc, const std::string& id);
// The JSON form above (inverse of find_subgraph's parse).
nlohmann::json subgraph_to_json(const SubgraphDefinition& definition);

// What an instance offers, for the editor: its definition's name, exposed ports (the inner ports'
// specs under the exposed names) and params (the inner params' specs likewise), through nested
// instances; a port or param whose inner node type is unknown gets type "*" / no spec.
struct SubgraphInterface {
  std::string name;
  std::size_t nodes = 0;
  std::vector<PortSpec> inputs, outputs;
  std::vector<ParamSpec> params;
};
Result<SubgraphInterface> subgraph_interface(const GraphDocument& doc, const Registry& registry, const Node& instance);
// The node type an instance shows as (title, ports, params; it has no compute: runs expand it).
NodeType subgraph_node_type(const SubgraphInterface& interface);

// The definition's inner nodes bound to `instance`, ids and inner links prefixed with `prefix`: the
// instance's input links on the exposed inputs' consumers (an unconnected one keeps the inner link),
// its param values on the exposed params. Errors name the instance: a param set or an input
// connected that the definition does not expose.
Result<std::vector<Node>> bind_instance(const Node& instance, const SubgraphDefinition& definition,
                                        const std::string& prefix);

// The inner param an instance's exposed param sets, through nested instances: its path after
// expansion ("Sampling/sampler"), param name and node type. The error says what the definition
// exposes instead.
struct ExposedTarget {
  std::string path;
  std::string param;
  std::string type;
};
Result<ExposedTarget> exposed_param_target(const GraphDocument& doc, const Node& instance, const std::string& param);

// Whether any node of `doc` is a subgraph instance.
bool has_subgraph_instances(const GraphDocument& doc);

// `doc` with every instance replaced by its inner nodes (recursively), ids as paths, links to and
// from instances rewired to the inner ports, exposed params set. Errors name the instance: an
// unknown definition, a param or port the definition does not expose, a bypassed instance, nesting
// past kMaxSubgraphDepth (a definition that contains itself).
Result<GraphDocument> expand_subgraphs(const GraphDocument& doc);

// Run targets after expansion: a target that was an instance becomes its inner nodes.
std::vector<std::string> expanded_targets(const GraphDocument& expanded, const std::vector<std::string>& targets);

}  // namespace vidgraph::engine
