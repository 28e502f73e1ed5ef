// Internal helpers shared by the node-type files: error values, file fingerprints for cache keys.
#pragma once

#include <string>
#include <vector>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "engine/result.h"
#include "engine/value.h"

namespace vidgraph::nodes {

// An error value for the node running in `ctx`.
inline engine::Error node_error(const engine::NodeContext& ctx, std::string message) {
  return engine::Error{ctx.node_id(), std::move(message)};
}

// "size:mtime" of a file or of every file in a folder (sorted), "" when absent: changes when the
// content on disk is replaced, so cached results are not served for a changed input file.
std::string file_fingerprint(const std::string& path);

// Cache-key input of a node that writes the file named by its param `param`: the resolved path, so
// a cached result is not served when the run writes elsewhere (another output folder, a sweep's run
// folder). Not the file's state: an unchanged graph run again stays cached instead of refusing to
// overwrite its own earlier output.
engine::FingerprintFn output_fingerprint(std::string param);

// Splits "a, b" / "a;b" lists of paths (trimmed, empties dropped).
std::vector<std::string> split_paths(const std::string& text);

}  // namespace vidgraph::nodes
