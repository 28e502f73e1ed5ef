// libFuzzer target: ComfyUI's extra_model_paths.yaml reader of models/io on arbitrary bytes (the
// reader takes a path: each input is written to one file in a private temporary folder).
//
// Contract checked: every problem is a std::runtime_error naming the file (anything else escaping,
// a crash or a hang is a finding), and the folders read stay within kMaxModelFolders.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fuzz_input_file.h"
#include "models/io/model_folders.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fuzz::write_input("extra_model_paths.yaml", data, size);
  try {
    const auto folders = vidgraph::model_io::read_extra_model_paths(path);
    std::size_t count = 0;
    for (const auto& [kind, list] : folders.folders) count += list.size();
    if (count > vidgraph::model_io::kMaxModelFolders) std::abort();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
