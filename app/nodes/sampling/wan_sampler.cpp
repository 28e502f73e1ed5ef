// Wan Sampler: flow-matching sampling of the Wan2.2 DiT for text-to-video and image-to-video (the
// image's VAE latent as a clean first frame for TI2V-5B; mask + image latent concatenated at every
// DiT call for I2V-A14B: sampler_setup.h ImageConditioning), with classifier-free guidance, UniPC,
// Euler or DMD few-step (sampler_dmd.h), the attention plugin's method and its params (optionally full attention
// for the first steps: sampler_dense.h), an optional initial latent, progress and a live preview
// per step (sampler_preview.h) and cancellation between steps.
#include <algorithm>
#include <memory>
#include <optional>

#include <c10/core/InferenceMode.h>


#include "models/sampling/flow_sampler.h"
#include "models/sampling/wan_velocity.h"
#include "nodes/attention_params_bridge.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/stage_memory.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/sampling/expert_swap.h"
#include "nodes/sampling/image_conditioning.h"
#include "nodes/sampling/latent.h"
#include "nodes/sampling/sampler_dense.h"
#include "nodes/sampling/sampler_preview.h"
#include "nodes/sampling/sampler_setup.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

// Encodes the image as the DiT takes it (SamplerSetup::image): TI2V-5B's clean first latent frame,
// or I2V-A14B's conditioning concatenated at every DiT call.
void condition_on_image(const engine::NodeContext& ctx, const DitHandle& dit, SamplerSetup& s,
                        sampling::WanVelocityOptions& velocity) {
  if (s.image == ImageConditioning::None) return;
  const VaeHandle& vae = ctx.input_as<VaeHandle>("vae");
  const Image& image = ctx.input_as<Image>("image");
  if (s.image == ImageConditioning::FirstFrame) {
    // [z, 1, h, w]
    s.options.first_frame = vae.vae->encode(image_video(vae, image))[0].to(dit.device, at::kFloat);
    return;
  }
  const bool last = ctx.has_input("last_image");
  const at::Tensor last_video = last ? image_video(vae, ctx.input_as<Image>("last_image")) : at::Tensor();
  velocity.condition = encode_i2v_condition(vae, image_video(vae, image), s.frames, {}, last_video).to(dit.device);
  s.info["image_conditioning"] =
      last ? "mask + first and last images' latent (I2V-A14B)" : "mask + image latent (I2V-A14B)";
}

// A second expert (Wan2.2-A14B's low-noise model) must be the same architecture on the same device.
engine::Status check_low_noise_expert(const engine::NodeContext& ctx, const DitHandle& high) {
  if (!ctx.has_input("low_noise_model")) return {};
  const DitHandle& low = ctx.input_as<DitHandle>("low_noise_model");
  if (!(low.model->config() == high.model->config())) {
    return node_error(ctx, "The low-noise expert (" + low.path + ") is not the same architecture as the model (" +
                           high.path + "); connect the two experts of one Wan2.2-A14B model.");
  }
  if (low.device != high.device || low.dtype != high.dtype) {
    return node_error(ctx, "The low-noise expert runs on " + low.device.str() + " and the model on " +
                           high.device.str() + " (or in another dtype); load both with the same device and dtype.");
  }
  return {};
}

engine::Result<engine::ValueMap> compute_sampler(engine::NodeContext& ctx, const AttentionParamSchema& schema,
                                                 const AttentionSource& attention) {
  const DitHandle& dit = ctx.input_as<DitHandle>("model");
  const Conditioning& cond = ctx.input_as<Conditioning>("conditioning");
  if (auto st = check_low_noise_expert(ctx, dit); !st.ok()) return st.error();
  auto setup = make_sampler_setup(ctx, dit, schema, attention);
  if (!setup.ok()) return setup.error();
  SamplerSetup& s = *setup;
  // Before any model work: the dense steps' attention is prepared like the method's.
  sampling::WanVelocityOptions velocity_options;
  const engine::Result<int> dense_steps = apply_dense_steps(ctx, s, velocity_options);
  if (!dense_steps.ok()) return dense_steps.error();
  const int dense = *dense_steps;

  c10::InferenceMode inference;
  const StageMemory memory(dit.device);
  condition_on_image(ctx, dit, s, velocity_options);
  const wan::WanConfig& config = dit.model->config();
  if (cond.context.dim() != 3 || cond.context.size(2) != config.text_dim) {
    return node_error(ctx, "The text embeddings are " + shape_text(cond.context) + " but the DiT "
                           "takes [1, L, " + std::to_string(config.text_dim) + "]; use the text "
                           "encoder of the same model.");
  }
  // The DiT holds at most text_len tokens; longer prompts are cut (the reference tokenizes to it).
  auto fit = [&](const at::Tensor& c) {
    if (c.size(1) <= config.text_len) return c.to(dit.device, dit.dtype);
    ctx.log_warn("Prompt cut to the model's " + std::to_string(config.text_len) + " tokens.");
    return c.narrow(1, 0, config.text_len).to(dit.device, dit.dtype);
  };
  velocity_options.context = fit(cond.context);
  velocity_options.context_null = fit(cond.context_null);
  velocity_options.attention = s.attention;
  velocity_options.batch_cfg = ctx.param_bool("batch_cfg");
  std::optional<ExpertSwap> swap;  // outlives the sampling that calls through it
  if (ctx.has_input("low_noise_model")) {
    const DitHandle& low = ctx.input_as<DitHandle>("low_noise_model");
    // The same architecture and attention preparation; only the weights differ.
    s.options.low_noise.model = sampling::make_wan_velocity(wan::WanModel(low.model), velocity_options);
    swap.emplace(dit, low);
    if (swap->active()) s.options.low_noise.model = swap->wrap(std::move(s.options.low_noise.model), true);
    s.options.low_noise.boundary = ctx.param_float("expert_boundary") * 1000.0;
    s.options.low_noise.guide_scale = ctx.param_float("guidance_low");
    s.info["expert_boundary"] = std::to_string(ctx.param_float("expert_boundary"));
    s.info["guidance_low"] = std::to_string(s.options.low_noise.guide_scale);
    ctx.log_info("Two experts: '" + dit.path + "' runs while the timestep is at least " +
                 std::to_string(int(s.options.low_noise.boundary)) + ", '" +
                 ctx.input_as<DitHandle>("low_noise_model").path + "' below it.");
  }
  sampling::VelocityFn velocity = sampling::make_wan_velocity(wan::WanModel(dit.model), std::move(velocity_options));
  if (swap && swap->active()) velocity = swap->wrap(std::move(velocity), false);
  s.options.on_step = [&ctx, dense](int done, int total) {
    ctx.progress(done, total, done <= dense ? "sampling (full attention)" : "sampling");
  };
  s.options.is_cancelled = [&ctx] { return ctx.cancelled(); };
  auto preview = SamplerPreview::make(ctx, s.options.latent_shape, dit.device);
  if (!preview.ok()) return preview.error();
  SamplerPreview& previews = **preview;
  if (previews.enabled()) {
    s.options.on_denoised = [&ctx, &previews](int done, int total, const at::Tensor& x0) {
      previews.post(ctx, done, total, x0);
    };
  }
  at::Tensor result;
  try {
    result = sampling::flow_sample(velocity, s.options);
  } catch (const sampling::SamplingCancelled& e) {
    return node_error(ctx, e.what());
  }
  if (const std::string cost = previews.summary(s.options.steps); !cost.empty()) ctx.log_info(cost);
  memory.report(ctx, "Wan Sampler");
  Latent latent;
  latent.samples = result.unsqueeze(0).to(c10::Device(c10::kCPU), at::kFloat).contiguous();
  latent.info = s.info;
  latent.info["positive"] = cond.positive;
  const std::size_t bytes = latent.bytes();
  return engine::ValueMap{{"latent", engine::make_value(kLatentType, std::move(latent), bytes)}};
}

}  // namespace

engine::NodeType wan_sampler_node(const std::vector<plugin::MethodInfo>& attention_methods,
                                  const AttentionSource& attention) {
  engine::NodeType t;
  t.name = "WanSampler";
  t.display_name = "Wan Sampler";
  t.category = "sampling";
  t.description = "Samples a video latent with the Wan2.2 DiT: text-to-video, or image-to-video when "
                  "an image is connected (TI2V-5B: its VAE latent is the clean first frame; I2V-A14B: "
                  "a mask and the image's latent beside the noise, needed). Classifier-free "
                  "guidance with the negative prompt, UniPC, Euler or DMD few-step (distilled "
                  "models such as FastWan2.2), the attention plugin's method and its params. "
                  "Progress per step; cancel stops before the next step.";
  t.inputs = {{"model", kModelType, false, "The DiT from Load Wan Model."},
              {"conditioning", kConditioningType, false, "Prompt embeddings from Encode Text."},
              {"vae", kVaeType, true, "The VAE; needed when an image is connected."},
              {"image", kImageType, true, "First frame for image-to-video (from Load Image); required by I2V-A14B."},
              {"last_image", kImageType, true,
               "Last frame (I2V-A14B only, with image): the video goes from the first frame to this one."},
              {"latent", kLatentType, true, "Initial latent instead of seeded noise."},
              {"low_noise_model", kModelType, true,
               "Wan2.2-A14B's low-noise expert (a second Load Wan Model): it runs the steps whose timestep "
               "is below expert_boundary, the model input the others."}};
  t.outputs = {{"latent", kLatentType, false, "The sampled latent [1, C, T, H/s, W/s], s the VAE's spatial factor (16 for Wan2.2, 8 for Wan2.1)."}};
  const plugin::MethodInfo* dense = plugin::find_method_of_kind(attention_methods, plugin::MethodKind::Dense);
  const std::string default_method = dense                       ? dense->name
                                     : attention_methods.empty() ? std::string()
                                                                 : attention_methods.front().name;
  std::vector<std::string> method_names;
  for (const auto& m : attention_methods) method_names.push_back(m.name);
  t.params = {
      ParamSpec::integer("width", 0, 0, 4096,
                         "Video width, a multiple of 32 (16 for models on Wan2.1's VAE); 0 = the image's (i2v) or 1280 (t2v)."),
      ParamSpec::integer("height", 0, 0, 4096,
                         "Video height, a multiple of 32 (16 for models on Wan2.1's VAE); 0 = the image's (i2v) or 704 (t2v)."),
      ParamSpec::integer("frames", 121, 1, 1025, "Frame count, 4k + 1 (Wan2.2: 121).").with_step(4),
      ParamSpec::integer("steps", 50, 1, 1000, "Sampling steps (Wan2.2: 50)."),
      ParamSpec::real("guidance", 5.0, 0.0, 30.0,
                      "Classifier-free guidance scale (Wan2.2: 5); 1 = no guidance, one model call "
                      "per step."),
      ParamSpec::real("shift", 5.0, 0.1, 20.0, "Sigma shift of the schedule (Wan2.2: 5)."),
      ParamSpec::real("expert_boundary", 0.875, 0.001, 1.0,
                      "With a low-noise expert: the fraction of the timesteps (out of 1000) below which it "
                      "runs (Wan2.2-A14B: 0.875 text-to-video, 0.9 image-to-video)."),
      ParamSpec::real("guidance_low", 3.0, 0.0, 30.0,
                      "With a low-noise expert: its guidance scale (Wan2.2-A14B: 3 text-to-video, 3.5 "
                      "image-to-video); guidance applies to the model input's steps."),
      ParamSpec::seed("seed", 0, "Noise seed; the same seed gives the same video on any device."),
      ParamSpec::enumeration("scheduler", {"unipc", "euler", "dmd"}, "unipc",
                             "UniPC (the reference's solver), Euler, or DMD few-step sampling for "
                             "distilled models such as FastWan2.2 (steps and shift unused: see "
                             "dmd_timesteps)."),
      ParamSpec::enumeration("attention", method_names, default_method,
                             "Self-attention method of the attention plugin; its params follow."),
      ParamSpec::boolean("batch_cfg", true,
                         "Run both guidance branches as one batch of 2 (faster); off halves peak "
                         "activation memory."),
      ParamSpec::string("dmd_timesteps", "1000,757,522",
                        "scheduler dmd: the step timesteps out of 1000, decreasing (FastWan2.2-TI2V-5B: "
                        "1000,757,522); each step predicts the clean latent and re-noises it at the "
                        "next timestep with seeded noise."),
      ParamSpec::integer("dense_steps", 0, 0, 1000,
                         "The first N steps use full attention, the rest the chosen method (the "
                         "early steps set the layout); 0 = the chosen method throughout."),
      ParamSpec::enumeration("preview", {"latent", "light_vae", "off"}, "latent",
                             "Live preview of each step's estimate: latent = a cheap projection of "
                             "the latent to RGB, light_vae = decoded by the TAEHV decoder in "
                             "preview_vae, off = none."),
      ParamSpec::file_path("preview_vae", "", "Weights (*.pth *.safetensors)",
                           "preview light_vae: the TAEHV weights for Wan2.2 (taew2_2.pth)."),
      ParamSpec::real("preview_budget", 5.0, 0.1, 100.0,
                      "preview light_vae: the percent of the sampling time light decodes may take; the "
                      "steps past it show the latent projection (100 = a light decode every step)."),
  };
  std::vector<std::string> taken;
  for (const auto& p : t.params) taken.push_back(p.name);
  auto schema = std::make_shared<const AttentionParamSchema>(attention_methods, taken);
  // The method's params right after the method choice.
  const auto after_method = std::find_if(t.params.begin(), t.params.end(),
                                         [](const ParamSpec& p) { return p.name == "attention"; }) + 1;
  t.params.insert(after_method, schema->specs().begin(), schema->specs().end());
  t.every_rank = true;  // several ranks: the DiT runs sequence-parallel over all of them
  t.compute = [schema, attention](engine::NodeContext& ctx) { return compute_sampler(ctx, *schema, attention); };
  return t;
}

}  // namespace vidgraph::nodes
