// VAE Decode: normalised latents [1, z, T, h, w] -> RGB frames (uint8, [F, H, W, 3]) through the
// Wan2.2 VAE, one latent frame per chunk (progress per chunk, cancel between chunks), optionally
// tiled over space to bound memory.
#include <ATen/ops/clamp.h>
#include <ATen/ops/round.h>

#include "models/vae/wan_vae.h"
#include "nodes/types/latent.h"
#include "nodes/types/model_handles.h"
#include "nodes/types/node_types.h"
#include "nodes/types/node_util.h"
#include "nodes/types/stage_memory.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

// video [1, 3, F, H, W] in [-1, 1] -> uint8 RGB frames [F, H, W, 3].
Frames to_frames(const at::Tensor& video) {
  // [1, 3, F, H, W] -> [F, H, W, 3] uint8
  const at::Tensor pixels = ((video[0].to(c10::Device(c10::kCPU), at::kFloat) + 1.0) * 127.5)
                                .round()
                                .clamp(0, 255)
                                .to(at::kByte)
                                .permute({1, 2, 3, 0})
                                .contiguous();
  Frames frames;
  frames.count = static_cast<int>(pixels.size(0));
  frames.height = static_cast<int>(pixels.size(1));
  frames.width = static_cast<int>(pixels.size(2));
  const auto* data = pixels.data_ptr<std::uint8_t>();
  frames.rgb.assign(data, data + pixels.numel());
  return frames;
}

engine::Result<engine::ValueMap> compute_vae_decode(engine::NodeContext& ctx) {
  const VaeHandle& vae = ctx.input_as<VaeHandle>("vae");
  const Latent& latent = ctx.input_as<Latent>("latent");
  if (latent.samples.dim() != 5 || latent.samples.size(1) != vae.vae->config().z_dim) {
    return node_error(ctx, "The latent has shape " + shape_text(latent.samples) + " but this VAE "
                           "expects [1, " + std::to_string(vae.vae->config().z_dim) +
                           ", T, h, w]; connect the latent of a sampler that used the same model.");
  }
  vae::VaeCallbacks callbacks;
  callbacks.progress = [&ctx](int64_t done, int64_t total) { ctx.progress(done, total, "decoding"); };
  callbacks.cancelled = [&ctx] { return ctx.cancelled(); };
  vae::VaeDecodeOptions options;
  options.output_device = c10::Device(c10::kCPU);
  if (ctx.param_bool("tiling")) {
    vae::VaeTiling tiling;
    tiling.tile_h = tiling.tile_w = ctx.param_int("tile_size");
    tiling.overlap = ctx.param_int("tile_overlap");
    if (tiling.overlap * 2 > tiling.tile_h) {
      return node_error(ctx, "tile_overlap must be at most half of tile_size.");
    }
    options.tiling = tiling;
  }
  const StageMemory memory(vae.device);
  at::Tensor video;
  try {
    video = vae.vae->decode(latent.samples.to(vae.device, vae.dtype), callbacks, options);
  } catch (const vae::VaeCancelled&) {
    return node_error(ctx, "VAE decode cancelled.");
  }
  memory.report(ctx, "VAE Decode");
  Video out;
  out.frames = to_frames(video);
  out.fps = ctx.param_float("fps");
  const std::size_t bytes = out.frames.rgb.size();
  return engine::ValueMap{{"video", engine::make_value(kVideoType, std::move(out), bytes)}};
}

}  // namespace

engine::NodeType vae_decode_node() {
  engine::NodeType t;
  t.name = "VAEDecode";
  t.display_name = "VAE Decode";
  t.category = "latent";
  t.description = "Decodes latents into RGB frames with the Wan2.2 VAE: one latent frame per chunk "
                  "(1 + 4 * (T - 1) frames out), progress per chunk; optional spatial tiling bounds "
                  "memory for large frames.";
  t.version = 1;
  t.inputs = {{"vae", kVaeType, false, "The VAE from Load Wan Model."},
              {"latent", kLatentType, false, "The latent from Wan Sampler or Load Latent."}};
  t.outputs = {{"video", kVideoType, false, "The decoded frames (uint8 RGB)."}};
  t.params = {
      ParamSpec::boolean("tiling", false, "Decode in overlapping spatial tiles to save memory."),
      ParamSpec::integer("tile_size", 32, 8, 256, "Tile side in latent cells (x16 pixels)."),
      ParamSpec::integer("tile_overlap", 8, 0, 128, "Tile overlap in latent cells."),
      ParamSpec::real("fps", 24.0, 1.0, 240.0, "Playback rate attached to the video for previews."),
  };
  t.compute = compute_vae_decode;
  return t;
}

}  // namespace vidgraph::nodes
