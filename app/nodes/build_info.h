// Versions of what this build links, for `vidgraph-run --version` and the editor's About dialog.
// No LibTorch or FFmpeg types here: callers (the GUI among them) only see strings.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vidgraph::nodes {

// (component, version) pairs in display order: Vidgraph, LibTorch, FFmpeg, GPU kernels. A component
// this build leaves out says so ("not built", "none").
std::vector<std::pair<std::string, std::string>> build_versions();

// The attention plugin the nodes use, loading it on first call: its name, version, ABI and path,
// or "none found".
std::string attention_plugin_version();

}  // namespace vidgraph::nodes
