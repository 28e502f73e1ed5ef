// Internal: one factory per built-in node type (one source file each, in the area folders beside this
// one: model/, sampling/, files/, datasets/, training/), collected by register_nodes.cpp. Each factory
// returns a complete descriptor: name, display name, category, description, version, typed ports,
// documented params with ranges, compute.
#pragma once

#include <string>
#include <vector>

#include "engine/node_type.h"
#include "nodes/common/attention_plugin.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::nodes {

engine::NodeType prompt_node();
engine::NodeType load_wan_model_node();
engine::NodeType load_lora_node();
engine::NodeType encode_text_node();
// Its attention params come from the plugin's descriptors (attention_params_bridge.h); it calls
// `attention`'s backend (without one, a run fails naming why).
engine::NodeType wan_sampler_node(const std::vector<plugin::MethodInfo>& attention_methods,
                                  const AttentionSource& attention = {});
// On a GPU its residual blocks run on the fused kernels of `attention`'s backend when it has them.
engine::NodeType vae_decode_node(const AttentionSource& attention);
engine::NodeType light_vae_decode_node();
engine::NodeType save_latent_node();
engine::NodeType load_latent_node();
engine::NodeType preview_video_node();
engine::NodeType train_wan_node(const AttentionSource& attention);
engine::NodeType distill_wan_node(const AttentionSource& attention);
#ifdef VIDGRAPH_HAVE_MEDIA
engine::NodeType load_image_node();
engine::NodeType export_video_node();
engine::NodeType load_video_dataset_node();
engine::NodeType encode_dataset_node();
engine::NodeType make_demo_dataset_node();
#endif  // VIDGRAPH_HAVE_MEDIA

}  // namespace vidgraph::nodes
