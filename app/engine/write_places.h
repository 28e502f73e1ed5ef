// The places a workflow writes or creates (its params marked ParamSpec::writes, resolved by the
// run's path rules), and the rule for a workflow that came inside a file someone shared: it writes
// only inside the output folder (RunOptions::confine_writes_to_output_dir).
//
// "Inside" is where the operating system would write: ".." and symbolic links on the way are
// followed (a link in the output folder that leads elsewhere leads outside). The output folder
// itself counts as inside. The engine checks every planned node before any node runs (engine.cpp);
// the editor lists the places to ask the user first.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document.h"
#include "registry.h"
#include "run_options.h"

namespace vidgraph::engine {

struct WritePlace {
  std::string node_id;
  std::string param;
  std::string path;  // resolved (RunOptions::resolve_path)
};

// The places `type` writes with `params` (defaults filled by the caller), non-empty paths only.
std::vector<WritePlace> write_places(const std::string& node_id, const NodeType& type,
                                     const nlohmann::json& params, const RunOptions& options);

// True when `path` (resolved) lies inside options.output_directory(), links followed.
bool inside_output_dir(const std::string& path, const RunOptions& options);

// The places of the document's nodes (bypassed nodes write nothing) that lie outside the output
// folder, whether or not the run confines them.
std::vector<WritePlace> places_outside_output_dir(const GraphDocument& doc, const Registry& registry,
                                                  const RunOptions& options);

// When options.confine_writes_to_output_dir: a sentence for each place of the node outside the
// output folder, naming the param, the path and the ways out; else nothing.
std::vector<std::string> check_confined_writes(const std::string& node_id, const NodeType& type,
                                               const nlohmann::json& params, const RunOptions& options);
// The same sentences for every node of the document (what a run would refuse before it starts).
std::vector<std::string> check_confined_writes(const GraphDocument& doc, const Registry& registry,
                                               const RunOptions& options);

}  // namespace vidgraph::engine
