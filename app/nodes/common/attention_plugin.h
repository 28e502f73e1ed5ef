// Internal: the attention plugin as the session hands it to the node types that call it (Wan
// Sampler, Train Wan). The session owns the plugin and keeps it loaded as long as the registry that
// holds these node types; nothing here loads one.
#pragma once

#include <string>
#include <vector>

#include "plugins/api/attention_backend.h"

namespace vidgraph::nodes {

struct AttentionSource {
  plugin::AttentionBackend* backend = nullptr;  // null: no plugin was loaded
  std::string missing;                          // then: why (the loader's report)

  // The methods the node types offer: the backend's, or "full" alone without one (a run then fails
  // with `missing`).
  std::vector<plugin::MethodInfo> methods() const;
};

}  // namespace vidgraph::nodes
