// The `.vgflow` workflow file format: load, save, migrate.
//
// Format (UTF-8 JSON):
//   {"format": "vidgraph-workflow", "version": N,
//    "nodes": [{"id": "...", "type": "...", "type_version": 1, "params": {...},
//               "inputs": {"port": {"node": "...", "output": "..."}}, ...unknown keys kept}],
//    "editor": {"nodes": {"<id>": {"pos": [x, y], ...}}, ...},
//    ...unknown top-level keys kept}
//
// Loading: size limit (kMaxWorkflowBytes), content sniffing (a video, an image, a model or other
// binary data is named as such: "not a workflow"), UTF-8 check, nesting-depth limit (kMaxWorkflowDepth),
// JSON parse, format id check, then the migration chain runs on the whole JSON from the file's
// version up to the current one, and only then is the (current-version) JSON parsed into a document;
// structural invariants are enforced (duplicate ids, dangling links, cycles → error naming the node;
// dangling links may instead be dropped and reported, see LoadOptions::drop_dangling_links).
// A file newer than the current version is refused. Unknown node types and unknown keys are kept.
// Node ids may be subgraph paths "instance/inner" (subgraph.h: what ran, as a run's history keeps it).
// Nothing is "corrected" on load: node-type upgrades are a separate, explicit step.
//
// Saving is canonical (sorted keys, 2-space indent, nodes in document order, trailing newline), so
// load → save reproduces a canonically saved file byte for byte. save_workflow_file writes a temp file
// in the same folder, flushes and fsyncs it, then renames it over the target: a failure at any point
// leaves the old file intact.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "document.h"
#include "result.h"

namespace vidgraph::engine {

inline constexpr const char* kWorkflowFormatId = "vidgraph-workflow";
inline constexpr int kWorkflowFormatVersion = 1;
inline constexpr std::size_t kMaxWorkflowBytes = 32u * 1024u * 1024u;
inline constexpr int kMaxWorkflowDepth = 64;

// One migration step: edits the whole document JSON from version `from` to `from + 1`.
using MigrationFn = std::function<Status(nlohmann::json& document)>;

// The chain of migrations up to `current_version`. The built-in chain is default_migrations();
// tests may build their own (e.g. with a v0 test format) to prove the mechanism.
struct MigrationChain {
  int current_version = kWorkflowFormatVersion;
  int oldest_version = kWorkflowFormatVersion;  // files older than this are refused
  std::map<int, MigrationFn> steps;             // from-version → step to from+1
};
const MigrationChain& default_migrations();

struct LoadOptions {
  const Registry* registry = nullptr;          // set on the document (for connect type checks)
  const MigrationChain* migrations = nullptr;  // null = default_migrations()
  // Editors: a link to a node id the file does not have is dropped (listed in broken_links and
  // warnings) instead of refusing the file, so it can be opened and fixed. Runners keep the default
  // (the file is refused with an error naming the node and the link).
  bool drop_dangling_links = false;
};

// An input whose link named a node that the file does not have (dropped on load).
struct BrokenLink {
  std::string node;     // the node with the input
  std::string port;     // its input
  InputLink link;       // what it was linked to
};

struct LoadedWorkflow {
  GraphDocument document;
  int file_version = kWorkflowFormatVersion;  // version found in the file, before migration
  std::vector<std::string> warnings;          // e.g. "migrated from version 0"
  std::vector<BrokenLink> broken_links;       // only with LoadOptions::drop_dangling_links
};

// `source` names the file in error messages ("<clipboard>", a path, ...).
Result<LoadedWorkflow> load_workflow_string(std::string_view text, const LoadOptions& options = {},
                                            const std::string& source = "<string>");
Result<LoadedWorkflow> load_workflow_file(const std::string& path, const LoadOptions& options = {});
// The bytes of a workflow file, read once: refused when missing, a folder or not a regular file (a
// FIFO would block), or larger than kMaxWorkflowBytes. Front ends that try several readers on one
// file (vidgraph-run: ComfyUI's formats, then Vidgraph's) read it with this, then parse the text.
Result<std::string> read_workflow_file(const std::string& path);

nlohmann::json workflow_to_json(const GraphDocument& doc);
std::string save_workflow_string(const GraphDocument& doc);
Status save_workflow_file(const GraphDocument& doc, const std::string& path);

// One node's JSON as in "nodes" (unknown keys kept in Node::extra); `source` and `index` name it in
// errors. node_to_json is its inverse (canonical form).
Result<Node> node_from_json(const nlohmann::json& j, const std::string& source, std::size_t index);
nlohmann::json node_to_json(const Node& node);

// Low-level pieces, exposed for tests and tools.
// What a file that is not a workflow is, from its first bytes ("an MP4 video", "a PNG image",
// "a binary file"); empty when the bytes may be JSON text.
std::string describe_non_workflow(std::string_view bytes);
// Checks that `bytes` is valid UTF-8; the error gives the byte offset.
Status check_utf8(std::string_view bytes);
// Checks that JSON text nests arrays/objects at most `max_depth` deep (strings are skipped).
Status check_json_depth(std::string_view text, int max_depth = kMaxWorkflowDepth);
// Writes `contents` to `path` atomically (temp in the same folder, fsync, rename). A symlink is
// written through: the file it points to is replaced in its own folder, the link is kept.
Status write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace vidgraph::engine
