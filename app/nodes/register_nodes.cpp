// Implements register_nodes.h: the one list of built-in node types.
#include "nodes/register_nodes.h"

#include <functional>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_types.h"
#include "nodes/nodes_log.h"
#include "plugins/api/attention_backend.h"

namespace vidgraph::nodes {

namespace {

// LibTorch's errors carry a C++ backtrace in what(); users see the sentence alone.
engine::ComputeFn without_backtraces(engine::ComputeFn compute) {
  return [compute = std::move(compute)](engine::NodeContext& ctx) {
    try {
      return compute(ctx);
    } catch (const c10::Error& e) {
      throw std::runtime_error(e.what_without_backtrace());
    }
  };
}

// The sampler's methods and their params are the plugin's own descriptors (attention.methods()).
std::vector<engine::NodeType> builtin_types(const AttentionSource& attention) {
  std::vector<engine::NodeType> types;
#ifdef VIDGRAPH_HAVE_MEDIA
  types.push_back(load_image_node());
#endif  // VIDGRAPH_HAVE_MEDIA
  types.push_back(prompt_node());
  types.push_back(load_wan_model_node());
  types.push_back(load_lora_node());
  types.push_back(encode_text_node());
  types.push_back(wan_sampler_node(attention.methods(), attention));
  types.push_back(vae_decode_node(attention));
  types.push_back(light_vae_decode_node());
  types.push_back(save_latent_node());
  types.push_back(load_latent_node());
  types.push_back(preview_video_node());
  types.push_back(train_wan_node(attention));
  types.push_back(distill_wan_node(attention));
#ifdef VIDGRAPH_HAVE_MEDIA
  types.push_back(export_video_node());
  types.push_back(load_video_dataset_node());
  types.push_back(encode_dataset_node());
  types.push_back(make_demo_dataset_node());
#endif  // VIDGRAPH_HAVE_MEDIA
  return types;
}

}  // namespace

void register_builtin_nodes(engine::Registry& registry, const BuiltinNodeOptions& options) {
  const AttentionSource attention{options.attention_backend, options.missing_backend};
  if (!attention.backend) nodes_logger()->warn("Wan Sampler offers only 'full' attention: {}", attention.missing);
  for (engine::NodeType& type : builtin_types(attention)) {
    const std::string name = type.name;
    type.compute = without_backtraces(std::move(type.compute));
    const engine::Status status = registry.add(std::move(type));
    if (!status.ok()) {
      nodes_logger()->error("Built-in node type {} was not registered: {}", name,
                            status.error().to_string());
    }
  }
}

std::vector<std::string> builtin_node_names() {
  std::vector<std::string> names;
  for (const engine::NodeType& type : builtin_types({})) names.push_back(type.name);
  return names;
}

}  // namespace vidgraph::nodes
