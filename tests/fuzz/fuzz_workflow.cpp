// libFuzzer target: the workflow loader of app/engine on arbitrary bytes, then what a run does
// before executing (upgrades, validation, plan) and a save/reload round trip.
//
// Contract checked: the loader and everything after it return errors as values (any exception
// escaping is a finding), stay bounded (size, depth and O(N log N) planning limit the work), and a
// document that loaded saves to text that loads again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/plan.h"
#include "engine/registry.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "engine_test_nodes.h"

namespace {

using namespace vidgraph::engine;

const Registry& registry() {
  static const Registry* reg = [] {
    auto* r = new Registry;  // never freed: shared by every input of the process
    vidgraph::test::register_engine_test_nodes(*r);
    return r;
  }();
  return *reg;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto loaded = load_workflow_string(text, {&registry(), nullptr}, "fuzz.vgflow");
  if (!loaded.ok()) return 0;
  GraphDocument doc = std::move(loaded->document);
  if (!upgrade_node_types(doc, registry()).ok()) return 0;
  (void)validate_document(doc, registry());
  (void)plan_execution(doc, {});
  if (!doc.nodes().empty()) (void)plan_execution(doc, {doc.nodes().front().id});
  const std::string saved = save_workflow_string(doc);
  if (!load_workflow_string(saved, {&registry(), nullptr}, "saved.vgflow").ok()) std::abort();
  return 0;
}
