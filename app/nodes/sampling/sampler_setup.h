// Internal: turns the Wan Sampler's params and inputs into the models' sampling options: checked
// size and frame rules, latent shape, solver, attention run (backend, method, its params) and the
// provenance saved with the latent. Every failure is a sentence naming the param to fix.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/node_context.h"
#include "engine/result.h"
#include "models/sampling/flow_sampler.h"
#include "models/wan/wan_attention.h"
#include "models/wan/wan_config.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

// How the sampler conditions on the `image` input, decided from the DiT's channels (sampler_setup.cpp).
enum class ImageConditioning {
  None,        // text-to-video
  FirstFrame,  // Wan2.2-TI2V-5B: the image's latent replaces the first latent frame (FlowSampleOptions::first_frame)
  Concat,      // Wan2.2-I2V-A14B: mask + latent of the image and zero frames, concatenated at each DiT call
};

struct SamplerSetup {
  sampling::FlowSampleOptions options;  // latent_shape, solver, steps, ... (callbacks unset)
  ImageConditioning image = ImageConditioning::None;
  wan::AttentionRun attention;
  int width = 0;
  int height = 0;
  int frames = 0;
  std::map<std::string, std::string> info;
};

class AttentionParamSchema;

// The latent [C, F, h, w] `config` samples (C its out_dim) for a width x height x frames video, through the strides of
// the VAE its latent belongs to (vae_config_for_latent); a node error when the sides are not
// multiples of one DiT patch in pixels (32 for Wan2.2-TI2V-5B, 16 on Wan2.1's VAE) or frames is not
// 4k + 1. Wan Sampler and Distill Wan size their latents through it.
engine::Result<std::vector<int64_t>> video_latent_shape(const engine::NodeContext& ctx, const wan::WanConfig& config,
                                                        int width, int height, int frames);

// `schema` maps the node's params to the chosen method's plugin params (attention_params_bridge.h);
// `attention` is the session's plugin the run will call.
engine::Result<SamplerSetup> make_sampler_setup(const engine::NodeContext& ctx, const DitHandle& dit,
                                                const AttentionParamSchema& schema,
                                                const AttentionSource& attention);

}  // namespace vidgraph::nodes
