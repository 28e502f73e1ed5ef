// The plugin's one exported symbol, vidgraph_plugin_entry (see plugins/api/plugin_entry.h).
#include "plugins/api/plugin_entry.h"
#include "plugins/attention/attention_plugin.h"

namespace {

vidgraph::plugin::AttentionBackend* create_backend() {
  return new vidgraph::attention::AttentionPluginBackend();
}

void destroy_backend(vidgraph::plugin::AttentionBackend* backend) { delete backend; }

}  // namespace

VIDGRAPH_PLUGIN_DEFINE_ENTRY("vidgraph_attention", VIDGRAPH_ATTENTION_VERSION,
                             "full, vsa and sla_star self-attention (CPU reference; GPU when built)",
                             create_backend, destroy_backend)
