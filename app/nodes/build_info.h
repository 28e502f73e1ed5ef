// Versions of what this build links, for `vidgraph-run --version` and the editor's About dialog.
// No LibTorch or FFmpeg types here: callers (the GUI among them) only see strings.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vidgraph::nodes {

// (component, version) pairs in display order: Vidgraph, LibTorch, BLAS, FFmpeg, GPU kernels. A
// component this build leaves out says so ("not built", "none").
std::vector<std::pair<std::string, std::string>> build_versions();

// The BLAS library LibTorch's CPU matrix products run on in this process, found by the symbols
// loaded: "OpenBLAS <version and config>", "BLIS ...", "Intel MKL", or the reference BLAS.
std::string blas_library();

// True when that is Netlib's reference BLAS (Debian's libblas3): CPU runs of the model are then
// 20-40x slower than with OpenBLAS.
bool blas_is_reference();

}  // namespace vidgraph::nodes
