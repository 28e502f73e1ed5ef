// libFuzzer target: the ComfyUI workflow import of app/interop (UI and API formats, recognised by
// content) on arbitrary bytes, then a save/reload round trip of what it made.
//
// Contract checked: the import returns errors as values (any exception escaping is a finding),
// stays bounded (size, depth, node and link counts of hostile graphs), and a workflow it made
// saves to text that the Vidgraph loader reads back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/workflow_file.h"
#include "interop/comfy_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto imported = vidgraph::comfy::import_comfy_string(text, "fuzz.json");
  if (!imported.ok()) return 0;
  const std::string saved = vidgraph::engine::save_workflow_string(imported->document);
  if (!vidgraph::engine::load_workflow_string(saved, {}, "saved.vgflow").ok()) std::abort();
  return 0;
}
