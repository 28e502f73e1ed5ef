// The built-in node types. The runner (vidgraph-run) and the editor do not call this themselves:
// they open a Session (session.h), which loads the attention plugin and registers these types
// against it. Call it directly only for a registry that also holds other types (tests).
// No LibTorch, OpenCV, FFmpeg or Qt types here.
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
  // The backend Wan Sampler and Train Wan call; its methods() and their params become the
  // sampler's attention params. The caller owns it and keeps it alive as long as the registry.
  // Null: only "full" is offered and their runs fail with `missing_backend` (the nodes never load
  // a plugin themselves).
  plugin::AttentionBackend* attention_backend = nullptr;
  std::string missing_backend = "no attention plugin was given to the node types";
};

// Adds every built-in node type to `registry`. A type the registry refuses (a name clash with one
// already registered) is skipped and logged on the "nodes" logger; the rest still register.
void register_builtin_nodes(engine::Registry& registry, const BuiltinNodeOptions& options = {});

// The names register_builtin_nodes adds in this build (media nodes only with VIDGRAPH_MEDIA).
std::vector<std::string> builtin_node_names();

}  // namespace vidgraph::nodes
