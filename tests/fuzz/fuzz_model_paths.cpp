// libFuzzer target: ComfyUI's extra_model_paths.yaml reader of models/io on arbitrary bytes (the
// reader takes a path: each input is written to one file in a private temporary folder).
//
// Contract checked: every problem is a std::runtime_error naming the file (anything else escaping,
// a crash or a hang is a finding), and the folders read stay within kMaxModelFolders.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "models/io/model_folders.h"

namespace {

const std::string& yaml_path() {
  static const std::string path = [] {
    char dir[] = "/tmp/vidgraph-fuzz-yaml-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/extra_model_paths.yaml";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(yaml_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
  try {
    const auto folders = vidgraph::model_io::read_extra_model_paths(yaml_path());
    std::size_t count = 0;
    for (const auto& [kind, list] : folders.folders) count += list.size();
    if (count > vidgraph::model_io::kMaxModelFolders) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
