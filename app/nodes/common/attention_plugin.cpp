// Implements attention_plugin.h.
#include "nodes/common/attention_plugin.h"

namespace vidgraph::nodes {

std::vector<plugin::MethodInfo> AttentionSource::methods() const {
  if (backend) return backend->methods();
  return {plugin::MethodInfo{"full", "dense softmax attention", {}}};
}

}  // namespace vidgraph::nodes
