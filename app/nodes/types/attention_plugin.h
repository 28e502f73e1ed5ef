// Internal: the process's attention plugin for the sampler, loaded on first use through
// plugins/api's loader and kept for the life of the program (models stay loaded between runs, and
// so does the backend they call).
#pragma once

#include <string>

#include "plugins/api/attention_backend.h"

namespace vidgraph::nodes {

// The loaded backend, or nullptr with `*error` set to the loader's report (folders searched and why
// each candidate failed). Thread-safe; a failure is retried on the next call.
plugin::AttentionBackend* attention_backend(std::string* error);

// Makes `backend` (owned by the caller, who keeps it alive) the one attention_backend() returns.
void use_attention_backend(plugin::AttentionBackend* backend);

// "vidgraph_attention 0.1.0 (plugin ABI 1, ...) from PATH", loading the plugin if needed;
// "none found" when the loader finds none.
std::string attention_plugin_description();

}  // namespace vidgraph::nodes
