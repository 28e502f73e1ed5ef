// Implements sampler_setup.h.
#include "nodes/sampling/sampler_setup.h"

#include "models/sampling/i2v_condition.h"
#include "models/vae/vae_config.h"
#include "models/vae/wan_vae.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/attention_params_bridge.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_util.h"
#include "nodes/sampling/latent.h"
#include "nodes/sampling/sampler_dmd.h"
#include "nodes/size_rules.h"
#include "nodes/value_types.h"
#include "plugins/api/attention_params.h"
#include "engine/listing.h"

namespace vidgraph::nodes {

namespace {

// Width and height: explicit, else the image's (i2v), else the reference's 1280x704.
engine::Status resolve_size(const engine::NodeContext& ctx, SamplerSetup& s) {
  s.width = static_cast<int>(ctx.param_int("width"));
  s.height = static_cast<int>(ctx.param_int("height"));
  if (ctx.has_input("image")) {
    const Image& image = ctx.input_as<Image>("image");
    if (s.width == 0 && s.height == 0) {
      s.width = image.width;
      s.height = image.height;
    } else if (s.width != image.width || s.height != image.height) {
      return node_error(ctx, "The image is " + std::to_string(image.width) + "x" +
                             std::to_string(image.height) + " but width x height is " +
                             std::to_string(s.width) + "x" + std::to_string(s.height) +
                             "; set both to 0 to follow the image, or size Load Image the same.");
    }
  } else if (s.width == 0 && s.height == 0) {
    s.width = 1280;
    s.height = 704;
  }
  return {};
}

// A last frame is for I2V-A14B's first-last-frame to video: beside a first one, of the video's size,
// with frames to go between them.
engine::Status check_last_image(const engine::NodeContext& ctx, const SamplerSetup& s) {
  if (!ctx.has_input("last_image")) return {};
  if (s.image != ImageConditioning::Concat) {
    const char* takes = s.image == ImageConditioning::FirstFrame ? "this DiT (TI2V-5B) takes a first frame only"
                                                                 : "this DiT takes no image";
    return node_error(ctx, std::string("A last frame (last_image) is for Wan2.2-I2V-A14B's first-last-frame to "
                                       "video; ") + takes + ". Disconnect last_image, or load the I2V-A14B experts.");
  }
  const Image& last = ctx.input_as<Image>("last_image");
  if (last.width != s.width || last.height != s.height) {
    return node_error(ctx, "The last image is " + std::to_string(last.width) + "x" + std::to_string(last.height) +
                           " but the video is " + std::to_string(s.width) + "x" + std::to_string(s.height) +
                           "; size its Load Image as the first image's.");
  }
  if (s.frames < 5) {
    return node_error(ctx, "A first and a last frame need at least 5 frames; got " + std::to_string(s.frames) + ".");
  }
  return {};
}

// An image needs the VAE whose latent the DiT samples (its out_dim channels) to encode it.
engine::Status check_image_vae(const engine::NodeContext& ctx, const wan::WanConfig& config) {
  if (!ctx.has_input("vae")) {
    return node_error(ctx, "Image-to-video needs the VAE: connect Load Wan Model's vae output.");
  }
  const vae::WanVaeConfig& vae = ctx.input_as<VaeHandle>("vae").vae->config();
  if (vae.z_dim != config.out_dim) {
    return node_error(ctx, "The VAE makes " + std::to_string(vae.z_dim) + "-channel latents (" + vae.name() +
                           ") but this DiT samples " + std::to_string(config.out_dim) + "; connect the VAE of "
                           "the same model (" + vae::vae_config_for_latent(config.out_dim).name() + ").");
  }
  return {};
}

// How the DiT takes the image, from its channels: Wan2.2-I2V-A14B's in_dim holds the latent, the
// mask and the image's latent (36 = 16 + 4 + 16, wan/image2video.py) and needs an image; a DiT whose
// in_dim equals out_dim replaces the first latent frame (TI2V-5B, on the Wan2.2 VAE) or, on Wan2.1's
// VAE (T2V-A14B, Wan2.1 T2V), was never trained on an image and takes none.
engine::Result<ImageConditioning> resolve_image_conditioning(const engine::NodeContext& ctx,
                                                            const wan::WanConfig& config) {
  const bool image = ctx.has_input("image");
  if (config.condition_channels() == sampling::i2v_condition_channels(config.out_dim)) {
    if (!image) {
      return node_error(ctx, "This DiT is an image-to-video model (Wan2.2-I2V-A14B: " + std::to_string(config.in_dim) +
                             " input channels); connect an image (Load Image) and the VAE, or load the "
                             "T2V-A14B experts for text-to-video.");
    }
  } else if (config.condition_channels() != 0) {
    return node_error(ctx, "This DiT takes " + std::to_string(config.in_dim) + " input channels for " +
                           std::to_string(config.out_dim) + " latent channels, which no Wan model Vidgraph "
                           "samples uses; load a Wan2.2 (TI2V-5B, T2V-A14B, I2V-A14B) or Wan2.1 T2V model.");
  } else if (!image) {
    return ImageConditioning::None;
  } else if (vae::vae_config_for_latent(config.out_dim).version == vae::VaeVersion::Wan21) {
    return node_error(ctx, "This is a text-to-video DiT (Wan2.2-T2V-A14B or Wan2.1 T2V), which takes no "
                           "image; disconnect the image, or load the I2V-A14B experts for image-to-video.");
  }
  if (auto st = check_image_vae(ctx, config); !st.ok()) return st.error();
  return config.condition_channels() == 0 ? ImageConditioning::FirstFrame : ImageConditioning::Concat;
}

// The method, its params from the node (attention_params_bridge.h) and the plugin's preparation for
// this model and latent: a setting the kernels refuse is a node error before the model runs.
engine::Status resolve_attention(const engine::NodeContext& ctx, const DitHandle& dit,
                                 const AttentionParamSchema& schema, const AttentionSource& attention,
                                 SamplerSetup& s) {
  const std::string method = ctx.param_string("attention");
  const plugin::MethodInfo* info = schema.find_method(method);
  if (!info) {
    return node_error(ctx, "The attention plugin has no method '" + method + "'; choose one of: " +
                           engine::comma_list(schema.method_names()) + ".");
  }
  plugin::AttentionBackend* backend = attention.backend;
  if (!backend) return node_error(ctx, "No attention plugin could be loaded: " + attention.missing);
  auto params = schema.params_for(*info, ctx.params());
  if (!params.ok()) return node_error(ctx, params.error().message);
  const wan::WanConfig& config = dit.model->config();
  const auto& shape = s.options.latent_shape;  // [C, F, H, W]
  plugin::PrepareRequest request;
  request.method = method;
  request.params = *params;
  request.device = dit.device;
  request.dtype = dit.dtype;
  request.head_dim = config.head_dim();
  request.grid = {shape[1] / config.patch_size[0], shape[2] / config.patch_size[1], shape[3] / config.patch_size[2]};
  plugin::PrepareResult prepared = backend->prepare(request);
  if (!prepared.prepared) {
    return node_error(ctx, "The attention plugin cannot run these settings on this model: " + prepared.error +
                           "; change the param it names, the method or the model's dtype.");
  }
  s.attention.backend = backend;
  s.attention.prepared = std::move(prepared.prepared);
  s.attention.dit_kernels = backend->dit_kernels();
  // Several ranks (vidgraph-run --nproc, torchrun): the DiT runs sequence-parallel over them. Load
  // Wan Model's preflight has checked the heads already; this catches a DiT from elsewhere.
  if (const auto sp = run_ranks(ctx.options())) {
    const int64_t heads = dit.model->config().num_heads;
    if (heads % sp->world_size() != 0) {
      return node_error(ctx, "The model's " + std::to_string(heads) + " attention heads do not divide over " +
                             std::to_string(sp->world_size()) + " processes; run with a process count that divides " +
                             std::to_string(heads) + ".");
    }
    s.attention.sequence_parallel = sp.get();
    ctx.log_info("The DiT runs sequence-parallel over " + std::to_string(sp->world_size()) + " processes, " +
                 std::to_string(heads / sp->world_size()) + " attention heads each.");
  }
  return {};
}

}  // namespace

engine::Result<std::vector<int64_t>> video_latent_shape(const engine::NodeContext& ctx, const wan::WanConfig& config,
                                                        int width, int height, int frames) {
  const vae::WanVaeConfig vae = vae::vae_config_for_latent(config.out_dim);
  const int64_t spatial = vae.spatial_factor(), temporal = vae.temporal_factor();
  const int multiple = static_cast<int>(spatial * config.patch_size[1]);
  if (!is_valid_output_size(width, height, multiple)) {
    return node_error(ctx, "width and height must be positive multiples of " + std::to_string(multiple) +
                           " for this model (got " + std::to_string(width) + "x" + std::to_string(height) + ").");
  }
  if ((frames - 1) % temporal != 0) {
    return node_error(ctx, "frames must be 4k + 1 (1, 5, 9, ..., 121); got " + std::to_string(frames) + ".");
  }
  return std::vector<int64_t>{config.out_dim, (frames - 1) / temporal + 1, height / spatial, width / spatial};
}

engine::Result<SamplerSetup> make_sampler_setup(const engine::NodeContext& ctx, const DitHandle& dit,
                                                const AttentionParamSchema& schema,
                                                const AttentionSource& attention) {
  SamplerSetup s;
  const wan::WanConfig& config = dit.model->config();
  auto image = resolve_image_conditioning(ctx, config);
  if (!image.ok()) return image.error();
  s.image = *image;
  if (auto st = resolve_size(ctx, s); !st.ok()) return st.error();
  s.frames = static_cast<int>(ctx.param_int("frames"));
  if (auto st = check_last_image(ctx, s); !st.ok()) return st.error();
  auto shape = video_latent_shape(ctx, config, s.width, s.height, s.frames);
  if (!shape.ok()) return shape.error();
  s.options.latent_shape = std::move(*shape);
  if (auto st = resolve_attention(ctx, dit, schema, attention, s); !st.ok()) return st.error();
  s.options.solver = ctx.param_string("scheduler") == "euler" ? sampling::SolverKind::Euler
                                                               : sampling::SolverKind::UniPC;
  s.options.steps = static_cast<int>(ctx.param_int("steps"));
  s.options.shift = ctx.param_float("shift");
  s.options.guide_scale = ctx.param_float("guidance");
  s.options.seed = static_cast<uint64_t>(ctx.param_int("seed"));
  s.options.device = dit.device;
  if (ctx.has_input("latent")) {
    const at::Tensor initial = ctx.input_as<Latent>("latent").samples;
    const std::vector<int64_t> want = s.options.latent_shape;
    if (initial.dim() != 5 || initial.size(0) != 1 ||
        std::vector<int64_t>(initial.sizes().begin() + 1, initial.sizes().end()) != want) {
      return node_error(ctx, "The initial latent has shape " + shape_text(initial) +
                             " but these settings need [1, " + std::to_string(want[0]) + ", " +
                             std::to_string(want[1]) + ", " + std::to_string(want[2]) + ", " +
                             std::to_string(want[3]) + "]; match width, height and frames.");
    }
    s.options.initial_latent = initial[0].to(dit.device, at::kFloat);
  }
  s.info = {{"seed", std::to_string(s.options.seed)},
            {"steps", std::to_string(s.options.steps)},
            {"guidance", std::to_string(s.options.guide_scale)},
            {"shift", std::to_string(s.options.shift)},
            {"scheduler", ctx.param_string("scheduler")},
            {"attention", s.attention.prepared->request.method},
            {"width", std::to_string(s.width)},
            {"height", std::to_string(s.height)},
            {"frames", std::to_string(s.frames)}};
  if (auto st = apply_dmd_params(ctx, s); !st.ok()) return st.error();
  return s;
}

}  // namespace vidgraph::nodes
