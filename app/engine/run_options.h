// Per-run settings a node can read: where outputs go, how relative paths resolve, overwrite policy,
// and the workflow's JSON text (embedded by export nodes as provenance).
//
// Path rules (resolve_path):
//   - an absolute path is returned unchanged;
//   - "{resources}/x" resolves against resources_dir (default: <exe_dir>/../share/vidgraph, see
//     default_resources_dir(); the runner's --resources overrides it);
//   - "{output}/x" resolves against output_dir;
//   - any other relative path resolves against workflow_dir (the folder of the workflow file), or the
//     current directory when the workflow was not loaded from a file.
// Results are lexically normalised ("a/./b/../c" → "a/c"); nothing is checked on disk.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace vidgraph::engine {

// What a front end hands the nodes beyond settings: the process group of a run of several
// processes. The nodes layer defines it (nodes/common/rank_broadcast.h) and reads it back.
struct RunServices {
  virtual ~RunServices() = default;
};

struct RunOptions {
  std::string output_dir;     // where nodes write files; empty = current directory
  std::string workflow_dir;   // folder of the workflow file; empty = current directory
  std::string resources_dir;  // empty = default_resources_dir()
  bool overwrite = false;     // nodes may replace existing output files only when true
  std::string workflow_json;  // the workflow as saved (canonical text), for output metadata
  // The workflow came inside a file someone shared (a video, a PNG sequence's metadata.json), so
  // it is untrusted: every place it writes or creates must lie inside output_dir (write_places.h),
  // checked before any node runs. A front end sets it unless the user allowed writes outside
  // (vidgraph-run --allow-outside-writes, the editor's confirmation naming every path).
  bool confine_writes_to_output_dir = false;
  // The ComfyUI extra_model_paths.yaml that nodes searching model folders use when their own
  // model_paths_file param is empty: the front end's VIDGRAPH_MODEL_PATHS (environment.h); empty = none.
  std::string model_paths_file;
  // A run of several processes (ranks): the ids of the nodes every rank runs (the nodes of
  // NodeType::every_rank types and those they need); the others run on rank 0 alone. Empty when
  // the run is one process.
  std::vector<std::string> every_rank_nodes;
  std::shared_ptr<const RunServices> services;  // null: one process, nothing more

  std::string resolve_path(const std::string& path) const;
  // output_dir made absolute (current directory when empty).
  std::string output_directory() const;
};

// <directory of the running executable>/../share/vidgraph, normalised; "" if it cannot be found.
std::string default_resources_dir();

}  // namespace vidgraph::engine
