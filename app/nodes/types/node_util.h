// Internal helpers shared by the node-type files: error values, file fingerprints for cache keys.
#pragma once

#include <string>
#include <vector>

#include "engine/node_context.h"
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

// Splits "a, b" / "a;b" lists of paths (trimmed, empties dropped).
std::vector<std::string> split_paths(const std::string& text);

}  // namespace vidgraph::nodes
