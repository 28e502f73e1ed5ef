// Entry point of the built-in node types: the runner (vidgraph-run) and the editor call it once at
// start-up, before loading plugins' node types. No LibTorch, OpenCV, FFmpeg or Qt types here.
//
// Registered (name — display name, category):
//   LoadImage — Load Image (image)            [only with VIDGRAPH_MEDIA]
//   Prompt — Prompt (conditioning)
//   LoadWanModel — Load Wan Model (model)
//   EncodeText — Encode Text (conditioning)
//   WanSampler — Wan Sampler (sampling)
//   VAEDecode — VAE Decode (latent)
//   SaveLatent / LoadLatent — Save Latent / Load Latent (latent)
//   PreviewVideo — Preview Video (video)
//   ExportVideo — Export Video (video)         [only with VIDGRAPH_MEDIA]
#pragma once

#include <string>
#include <vector>

#include "engine/registry.h"

namespace vidgraph::plugin {
class AttentionBackend;  // plugins/api/attention_backend.h (not included: no ATen here)
}  // namespace vidgraph::plugin

namespace vidgraph::nodes {

struct BuiltinNodeOptions {
  // The backend the sampler calls; its methods() and their params become the sampler's attention
  // params. Callers that loaded the plugin themselves pass it here (it must outlive every run);
  // null = the nodes load it through plugins/api's loader (without one, only "full" is offered).
  plugin::AttentionBackend* attention_backend = nullptr;
};

// Adds every built-in node type to `registry`. A type the registry refuses (a name clash with one
// already registered) is skipped and logged on the "nodes" logger; the rest still register.
void register_builtin_nodes(engine::Registry& registry, const BuiltinNodeOptions& options = {});

// The names register_builtin_nodes adds in this build (media nodes only with VIDGRAPH_MEDIA).
std::vector<std::string> builtin_node_names();

}  // namespace vidgraph::nodes
