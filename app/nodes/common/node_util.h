// Internal helpers shared by the node-type files: error values, file fingerprints for cache keys.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "engine/result.h"
#include "engine/value.h"

namespace vidgraph::nodes {

// An error value for the node running in `ctx`.
inline engine::Error node_error(const engine::NodeContext& ctx, std::string message) {
  return engine::Error{ctx.node_id(), std::move(message)};
}

// The dtype a node's dtype param names ("float32", "bfloat16", "float16"); nullopt for any other
// choice ("auto"), which the node decides.
std::optional<at::ScalarType> dtype_param(const std::string& name);

// "size:mtime" of a file, "" when absent: changes when the content on disk is replaced, so cached
// results are not served for a changed input file. Deliberately looser than file_identity.h (which
// adds inode and ctime, for headers kept in memory): keys that outlive the process, such as the
// dataset cache's, should survive a copy or move that keeps the files' contents and times. For a
// folder, only the folder's own mtime (entries added, removed or renamed): it never walks the tree,
// which could be `/`. Nodes that read files inside a folder fingerprint those files
// (files_fingerprint).
std::string file_fingerprint(const std::string& path);

// "path=size:mtime;" for each of `files` in the order given (a missing file gives "path=;").
std::string files_fingerprint(const std::vector<std::string>& files);

// The fingerprint of the file named by the path param `param`, resolved with the run's path rules.
// Throws std::runtime_error naming the param when its value is not valid UTF-8 (the engine turns
// that into the node's error before the params are hashed as JSON, which would fail on it).
std::string file_param_fingerprint(const nlohmann::json& params, const engine::RunOptions& options,
                                   const std::string& param);

// Throws std::runtime_error naming the param for every string param that is not valid UTF-8.
void require_utf8_params(const nlohmann::json& params);

// Cache-key input of a node that writes the file named by its param `param`: the resolved path, so
// a cached result is not served when the run writes elsewhere (another output folder, a sweep's run
// folder). Not the file's state: an unchanged graph run again stays cached instead of refusing to
// overwrite its own earlier output.
engine::FingerprintFn output_fingerprint(std::string param);

// Splits "a, b" / "a;b" lists (paths, patterns; trimmed, empties dropped).
std::vector<std::string> split_list(const std::string& text);

}  // namespace vidgraph::nodes
