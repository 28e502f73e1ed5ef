// The plugin entry: the one exported C symbol of a Vidgraph plugin and the handshake it returns.
//
// A plugin is a shared library (CMake MODULE) exporting
//     extern "C" const VidgraphPluginInfo* vidgraph_plugin_entry(void);
// The loader reads the first three fields before anything else; they keep their place and type in
// every ABI version. A plugin whose abi_version, LibTorch version or compiler ABI differs from the
// program's is reported and skipped, never called (the interface passes at::Tensor, a C++ type).
// Define a plugin's entry with VIDGRAPH_PLUGIN_DEFINE_ENTRY (below), which fills the handshake fields
// from the headers the plugin was compiled against.
#pragma once

#include <torch/csrc/api/include/torch/version.h>

#include <cstdint>

// Bump on any change to AttentionBackend, DitKernels, VaeKernels, AttentionCall, PreparedAttention, MethodInfo,
// ParamValue or this struct.
#define VIDGRAPH_PLUGIN_ABI_VERSION 5u

#define VIDGRAPH_PLUGIN_ENTRY_SYMBOL "vidgraph_plugin_entry"

#define VIDGRAPH_PLUGIN_STR2(x) #x
#define VIDGRAPH_PLUGIN_STR(x) VIDGRAPH_PLUGIN_STR2(x)

// The compiler ABI that matters for passing std:: and at:: types across the boundary.
#if defined(_GLIBCXX_USE_CXX11_ABI)
#define VIDGRAPH_PLUGIN_CXX11_ABI VIDGRAPH_PLUGIN_STR(_GLIBCXX_USE_CXX11_ABI)
#else
#define VIDGRAPH_PLUGIN_CXX11_ABI "none"
#endif
#if defined(__clang__)
#define VIDGRAPH_PLUGIN_COMPILER_FAMILY "clang"
#elif defined(__GNUC__)
#define VIDGRAPH_PLUGIN_COMPILER_FAMILY "gcc"
#else
#define VIDGRAPH_PLUGIN_COMPILER_FAMILY "other"
#endif
// Both GCC and Clang follow the Itanium C++ ABI on Linux; the libstdc++ dual ABI is what differs.
#define VIDGRAPH_PLUGIN_COMPILER_ABI "itanium-glibcxx11abi=" VIDGRAPH_PLUGIN_CXX11_ABI
#define VIDGRAPH_PLUGIN_TORCH_VERSION \
  VIDGRAPH_PLUGIN_STR(TORCH_VERSION_MAJOR) "." VIDGRAPH_PLUGIN_STR(TORCH_VERSION_MINOR)

namespace vidgraph::plugin {
class AttentionBackend;
}

extern "C" {

struct VidgraphPluginInfo {
  // --- fixed in every ABI version ---
  uint32_t abi_version;       // VIDGRAPH_PLUGIN_ABI_VERSION the plugin was built with
  const char* torch_version;  // "MAJOR.MINOR" of the LibTorch headers it was built with
  const char* compiler_abi;   // VIDGRAPH_PLUGIN_COMPILER_ABI
  // --- ABI version 1 ---
  const char* name;         // e.g. "vidgraph_attention"
  const char* version;      // the plugin's own version, e.g. "0.1.0"
  const char* description;  // one line
  // Creates the backend (never nullptr; may throw, the loader catches and reports).
  vidgraph::plugin::AttentionBackend* (*create_attention_backend)();
  // Destroys what create_attention_backend returned (after AttentionBackend::shutdown()).
  void (*destroy_attention_backend)(vidgraph::plugin::AttentionBackend*);
};

typedef const VidgraphPluginInfo* (*VidgraphPluginEntryFn)(void);

}  // extern "C"

// Emits the entry symbol. Use once per plugin, at namespace scope.
#define VIDGRAPH_PLUGIN_DEFINE_ENTRY(NAME, VERSION, DESCRIPTION, CREATE_FN, DESTROY_FN) \
  extern "C" __attribute__((visibility("default"))) const VidgraphPluginInfo*          \
  vidgraph_plugin_entry(void) {                                                         \
    static const VidgraphPluginInfo info = {VIDGRAPH_PLUGIN_ABI_VERSION,                \
                                            VIDGRAPH_PLUGIN_TORCH_VERSION,              \
                                            VIDGRAPH_PLUGIN_COMPILER_ABI,               \
                                            NAME,                                       \
                                            VERSION,                                    \
                                            DESCRIPTION,                                \
                                            CREATE_FN,                                  \
                                            DESTROY_FN};                                \
    return &info;                                                                       \
  }
