// Test fixture: a plugin entry with a chosen handshake (wrong ABI version, wrong LibTorch version) or
// a throwing factory. Never a usable plugin.
#include "plugins/api/plugin_entry.h"

#include <stdexcept>

#ifndef FIXTURE_ABI
#define FIXTURE_ABI VIDGRAPH_PLUGIN_ABI_VERSION
#endif
#ifndef FIXTURE_TORCH
#define FIXTURE_TORCH VIDGRAPH_PLUGIN_TORCH_VERSION
#endif

namespace {

vidgraph::plugin::AttentionBackend* create() {
#ifdef FIXTURE_THROWS
  throw std::runtime_error("boom: fixture factory");
#else
  return nullptr;
#endif
}

void destroy(vidgraph::plugin::AttentionBackend*) {}

}  // namespace

extern "C" __attribute__((visibility("default"))) const VidgraphPluginInfo* vidgraph_plugin_entry(void) {
  static const VidgraphPluginInfo info = {FIXTURE_ABI, FIXTURE_TORCH, VIDGRAPH_PLUGIN_COMPILER_ABI,
                                          "fixture", "0.0.1", "test fixture", create, destroy};
  return &info;
}
