// Light VAE Decode: normalised Wan2.2 latents [1, 48, T, h, w] -> RGB frames through the TAEHV
// decoder (madebyollin's taew2_2.pth): much faster and lighter than the Wan VAE, slightly lower
// quality; for previews and fast drafts (e.g. after FastWan's 3 DMD steps).
// A node of its own rather than a mode of VAE Decode: it needs only its small weight file, not the
// Wan VAE handle, so the graph is latent -> Light VAE Decode -> preview/export, one box.
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include "models/vae/taehv.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/input_file.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/latent.h"
#include "nodes/sampling/video_frames.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

engine::Result<c10::Device> light_vae_device(const engine::NodeContext& ctx) {
  const std::string name = ctx.param_string("device");
  if (name == "cpu" || (name == "auto" && !at::hasCUDA())) return c10::Device(c10::kCPU);
  if (!at::hasCUDA()) {
    return node_error(ctx, "device is cuda but this LibTorch sees no GPU; choose cpu or auto.");
  }
  return c10::Device(c10::kCUDA, 0);
}

engine::Result<engine::ValueMap> compute_light_vae_decode(engine::NodeContext& ctx) {
  const std::string path = ctx.param_path("path");
  const std::string bad = check_input_path("path", path, InputKind::File,
                                           "the TAEHV weights for Wan2.2 (taew2_2.pth or .safetensors)");
  if (!bad.empty()) return node_error(ctx, bad);
  auto device = light_vae_device(ctx);
  if (!device.ok()) return device.error();
  const Latent& latent = ctx.input_as<Latent>("latent");
  // The reference runs TAEHV in fp16 on GPUs; fp32 on the CPU.
  const at::ScalarType dtype = device->is_cpu() ? at::kFloat : at::kHalf;
  vae::VaeCallbacks callbacks;
  callbacks.progress = [&ctx](int64_t done, int64_t total) { ctx.progress(done, total, "decoding"); };
  callbacks.cancelled = [&ctx] { return ctx.cancelled(); };
  at::Tensor video;
  try {
    const auto decoder = vae::TaehvDecoder::load(path, *device, dtype);
    if (latent.samples.dim() != 5 || latent.samples.size(1) != decoder->config().latent_channels) {
      return node_error(ctx, "The latent has shape " + shape_text(latent.samples) + " but '" + path +
                             "' decodes [1, " + std::to_string(decoder->config().latent_channels) +
                             ", T, h, w]; use taew2_2 for Wan2.2-TI2V-5B latents.");
    }
    video = decoder->decode(latent.samples, callbacks, ctx.param_int("chunk_frames"));
  } catch (const vae::VaeCancelled&) {
    return node_error(ctx, "Light VAE decode cancelled.");
  } catch (const c10::Error& e) {
    return node_error(ctx, "Decoding with '" + path + "' failed: " + e.what_without_backtrace() +
                           "; lower chunk_frames to use less memory.");
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Could not use the light VAE: ") + e.what());
  }
  return video_output(video, ctx.param_float("fps"));
}

}  // namespace

engine::NodeType light_vae_decode_node() {
  engine::NodeType t;
  t.name = "LightVAEDecode";
  t.display_name = "Light VAE Decode";
  t.category = "latent";
  t.description = "Decodes Wan2.2-TI2V-5B latents into RGB frames with the TAEHV light decoder "
                  "(taew2_2.pth from madebyollin/taehv): a fraction of the Wan VAE's time and "
                  "memory at slightly lower quality; 1 + 4 * (T - 1) frames, 16x the latent size.";
  t.inputs = {{"latent", kLatentType, false, "The latent from Wan Sampler or Load Latent."}};
  t.outputs = {{"video", kVideoType, false, "The decoded frames (uint8 RGB)."}};
  t.params = {
      ParamSpec::file_path("path", "", "Weights (*.pth *.safetensors)",
                           "The TAEHV weights for Wan2.2: taew2_2.pth (or its .safetensors)."),
      ParamSpec::enumeration("device", {"auto", "cpu", "cuda"}, "auto",
                             "Where the decoder runs; auto = the GPU when there is one (fp16), "
                             "else the CPU (fp32)."),
      ParamSpec::integer("chunk_frames", 4, 1, 1024,
                         "Latent frames decoded at once; fewer use less memory, same result."),
      ParamSpec::real("fps", 24.0, 1.0, 240.0, "Playback rate attached to the video for previews."),
  };
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    return file_param_fingerprint(params, options, "path");
  };
  t.compute = compute_light_vae_decode;
  return t;
}

}  // namespace vidgraph::nodes
