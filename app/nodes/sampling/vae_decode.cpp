// VAE Decode: normalised latents [1, z, T, h, w] -> RGB frames (uint8, [F, H, W, 3]) through the
// Wan2.2 VAE, one latent frame per chunk (progress per chunk, cancel between chunks), optionally
// tiled over space to bound memory. In a run of several ranks a tiled decode is split over them
// (each decodes every N-th tile, rank 0 blends); an untiled one runs on rank 0.
#include <ATen/ops/tensor.h>
#include <c10/util/Exception.h>

#include "models/device/device_memory.h"
#include "models/vae/vae_tiling.h"
#include "models/vae/wan_vae.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/common/stage_memory.h"
#include "nodes/model/model_handles.h"
#include "nodes/nodes_log.h"
#include "nodes/sampling/latent.h"
#include "nodes/sampling/video_frames.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using device::format_gib;
using engine::ParamSpec;

namespace {

// What a rank above 0 returns: rank 0 alone holds the decoded video (only rank 0 exports).
engine::Value empty_video() { return engine::make_value(kVideoType, Video{}, 0); }

// The memory decode may use: memory_limit_gib when set, else 3/4 of available RAM (where the
// decoded video always goes). 0 = unknown (GPU working memory without memory_limit_gib: the
// device memory counters give no free size).
struct DecodeBudget {
  int64_t working = 0;  // on the VAE's device; 0 = unchecked
  int64_t output = 0;   // RAM for the decoded video
  std::string source;
};

DecodeBudget decode_budget(const engine::NodeContext& ctx, const c10::Device& device) {
  const double limit_gib = ctx.param_float("memory_limit_gib");
  DecodeBudget b;
  const int64_t limit = int64_t(limit_gib * double(int64_t(1) << 30));
  const int64_t ram = limit > 0 ? limit : device::available_ram_bytes() / 4 * 3;
  b.source = limit > 0 ? "memory_limit_gib" : "3/4 of the available RAM";
  b.output = ram;
  if (device.is_cpu()) b.working = ram;  // working and output share the RAM (checked as a sum)
  else if (limit > 0) b.working = limit;
  return b;
}

bool fits(const vae::VaeDecodeMemory& m, const DecodeBudget& b, bool cpu) {
  if (cpu) return m.total() <= b.output;
  return m.output <= b.output && (b.working == 0 || m.working <= b.working);
}

// Picks untiled or tiled decode from the memory estimate; an error when neither fits.
engine::Result<std::optional<vae::VaeTiling>> plan_tiling(const engine::NodeContext& ctx, const VaeHandle& vae,
                                                          const at::Tensor& latent, vae::VaeTiling tiling) {
  const std::vector<int64_t> sizes(latent.sizes().begin(), latent.sizes().end());
  const int64_t elt = int64_t(c10::elementSize(vae.dtype));
  const bool cpu = vae.device.is_cpu();
  const DecodeBudget budget = decode_budget(ctx, vae.device);
  const auto untiled = vae::estimate_decode_memory(vae.vae->config(), sizes, elt, std::nullopt);
  const auto tiled = vae::estimate_decode_memory(vae.vae->config(), sizes, elt, tiling);
  if (!ctx.param_bool("tiling")) {
    if (fits(untiled, budget, cpu)) return std::optional<vae::VaeTiling>();
    if (fits(tiled, budget, cpu)) {
      const std::string line = "Untiled decode of latent " + shape_text(latent) + " needs about " +
                               format_gib(untiled.total()) + ", more than the budget of " + format_gib(budget.output) +
                               " (" + budget.source + "); tiling turned on (tile_size " +
                               std::to_string(tiling.tile_h) + ", about " + format_gib(tiled.total()) + ").";
      nodes_logger()->info("{}: {}", ctx.node_id(), line);
      ctx.log_info(line);
      return std::optional<vae::VaeTiling>(tiling);
    }
  } else if (fits(tiled, budget, cpu)) {
    return std::optional<vae::VaeTiling>(tiling);
  }
  return node_error(ctx, "Decoding latent " + shape_text(latent) + " needs about " + format_gib(tiled.total()) +
                         " even tiled (tile_size " + std::to_string(tiling.tile_h) + ": " +
                         format_gib(tiled.working) + " working, " + format_gib(tiled.output) + " for the decoded " +
                         "video), more than the budget of " + format_gib(budget.output) + " (" + budget.source +
                         "); decode fewer frames or a smaller size, lower tile_size, or free memory.");
}

// Several ranks: each decodes every N-th tile and sends it to rank 0 (an all-gather on the group's
// device), which blends them all; the others keep no video.
vae::TileShare rank_tile_share(std::shared_ptr<parallel::SequenceParallel> sp) {
  vae::TileShare share;
  share.part = sp->rank();
  share.parts = sp->world_size();
  share.exchange = [sp](const at::Tensor& mine) {
    parallel::ProcessGroupHandle& group = sp->group();
    std::vector<at::Tensor> tiles = group.all_gather(mine.to(group.options().device).contiguous());
    return sp->rank() == 0 ? tiles : std::vector<at::Tensor>();
  };
  return share;
}

// Several ranks: rank 0 plans the decode (its memory budget decides), and the others follow: a tiled
// decode is shared by all ranks, an untiled one is rank 0's alone. One process plans alone.
engine::Result<std::optional<vae::VaeTiling>> plan_with_ranks(const engine::NodeContext& ctx, const VaeHandle& vae,
                                                              const at::Tensor& latent, const vae::VaeTiling& tiling) {
  using Plan = std::optional<vae::VaeTiling>;
  return computed_on_rank0<Plan>(
      ctx, "plan the VAE decode", [&] { return plan_tiling(ctx, vae, latent, tiling); },
      [](const Plan& plan) { return std::vector{at::tensor({plan ? 1.0f : 0.0f})}; },
      [&](const std::vector<at::Tensor>& tensors) -> engine::Result<Plan> {
        return tensors.at(0).item<float>() > 0 ? Plan(tiling) : std::nullopt;
      });
}

engine::Result<engine::ValueMap> compute_vae_decode(engine::NodeContext& ctx, const AttentionSource& attention) {
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
  options.fused = attention.backend ? attention.backend->vae_kernels() : nullptr;  // the GPU's norm passes
  vae::VaeTiling tiling;
  tiling.tile_h = tiling.tile_w = ctx.param_int("tile_size");
  tiling.overlap = ctx.param_int("tile_overlap");
  if (tiling.overlap * 2 > tiling.tile_h) {
    return node_error(ctx, "tile_overlap must be at most half of tile_size.");
  }
  auto plan = plan_with_ranks(ctx, vae, latent.samples, tiling);
  if (!plan.ok()) return plan.error();
  options.tiling = *plan;
  if (receives_from_rank0(ctx.options()) && !options.tiling) return engine::ValueMap{{"video", empty_video()}};
  if (const auto sp = node_ranks(ctx); sp && options.tiling) {
    options.tile_share = rank_tile_share(sp);
    if (sp->rank() == 0) ctx.log_info("The tiled decode is shared by " + std::to_string(sp->world_size()) + " ranks.");
  }
  const StageMemory memory(vae.device);
  at::Tensor video;
  try {
    video = vae.vae->decode(latent.samples.to(vae.device, vae.dtype), callbacks, options);
    if (!video.defined()) return engine::ValueMap{{"video", empty_video()}};  // rank 0 has the video
  } catch (const vae::VaeCancelled&) {
    return node_error(ctx, "VAE decode cancelled.");
  } catch (const c10::Error& e) {  // e.g. an allocation the estimate missed; no C++ backtrace
    return node_error(ctx, std::string("Decoding latent ") + shape_text(latent.samples) + " failed: " +
                           e.what_without_backtrace() + "; turn tiling on or lower tile_size.");
  }
  memory.report(ctx, "VAE Decode");
  return video_output(video, ctx.param_float("fps"));
}

}  // namespace

engine::NodeType vae_decode_node(const AttentionSource& attention) {
  engine::NodeType t;
  t.name = "VAEDecode";
  t.display_name = "VAE Decode";
  t.category = "latent";
  t.description = "Decodes latents into RGB frames with the Wan2.2 VAE: one latent frame per chunk "
                  "(1 + 4 * (T - 1) frames out), progress per chunk; spatial tiling bounds memory for "
                  "large frames. The memory is estimated before decoding: tiling turns on by itself "
                  "(logged) when an untiled decode would exceed the budget (memory_limit_gib, or 3/4 "
                  "of the available RAM), and a decode that does not fit even tiled is refused.";
  t.inputs = {{"vae", kVaeType, false, "The VAE from Load Wan Model."},
              {"latent", kLatentType, false, "The latent from Wan Sampler or Load Latent."}};
  t.outputs = {{"video", kVideoType, false, "The decoded frames (uint8 RGB)."}};
  t.params = {
      ParamSpec::boolean("tiling", false,
                         "Decode in overlapping spatial tiles to save memory; off = untiled unless "
                         "the memory estimate exceeds the budget."),
      ParamSpec::integer("tile_size", 32, 8, 256, "Tile side in latent cells (16 pixels each with the Wan2.2 VAE, 8 with Wan2.1's)."),
      ParamSpec::integer("tile_overlap", 8, 0, 128, "Tile overlap in latent cells."),
      ParamSpec::real("fps", 24.0, 1.0, 240.0, "Playback rate attached to the video for previews."),
      ParamSpec::real("memory_limit_gib", 0.0, 0.0, 65536.0,
                      "Memory budget of the decode in GiB; 0 = 3/4 of the available RAM (on a GPU "
                      "only the decoded video's RAM is checked unless set)."),
  };
  t.every_rank = true;  // several ranks share a tiled decode
  t.compute = [attention](engine::NodeContext& ctx) { return compute_vae_decode(ctx, attention); };
  return t;
}

}  // namespace vidgraph::nodes
