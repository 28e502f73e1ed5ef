// Implements train_validation.h.
#include "nodes/training/train_validation.h"

#include <c10/core/InferenceMode.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "models/parallel/sequence_parallel.h"
#include "models/sampling/flow_sampler.h"
#include "models/sampling/wan_velocity.h"
#include "nodes/common/node_util.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/sampling/sampler_preview.h"
#include "nodes/sampling/video_frames.h"
#include "nodes/value_types.h"
#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/video_export.h"
#endif

namespace vidgraph::nodes {

using engine::ParamSpec;

std::vector<ParamSpec> validation_params() {
  std::vector<ParamSpec> params = {
      ParamSpec::integer("validate_every", 0, 0, 1000000,
                         "Sample a validation clip from the validation prompt every N steps and after the "
                         "last (0: never)."),
      ParamSpec::integer("validation_steps", 8, 1, 200, "Sampling steps of a validation clip (UniPC, no guidance)."),
      ParamSpec::seed("validation_seed", 0, "The noise of every validation clip (the same for each)."),
      ParamSpec::folder_path("validation_folder", "{output}/validation",
                             "Where the validation clips go (step_000040.mp4, ...; never replaced).").written(),
  };
  for (ParamSpec& p : params) p.advanced = p.name != "validate_every";
  return params;
}

engine::Result<std::unique_ptr<TrainValidation>> TrainValidation::make(const engine::NodeContext& ctx,
                                                                      const TrainingSet& set) {
  return make(ctx, set.samples.at(0).latent_shape);
}

engine::Result<std::unique_ptr<TrainValidation>> TrainValidation::make(const engine::NodeContext& ctx,
                                                                      std::vector<int64_t> latent_shape) {
  const int64_t every = ctx.param_int("validate_every");
  if (every == 0) return std::unique_ptr<TrainValidation>();
  if (!ctx.has_input("validation")) {
    return node_error(ctx, "validate_every is " + std::to_string(every) +
                               " but no validation prompt is connected; connect an Encode Text to "
                               "validation, or set validate_every to 0.");
  }
  auto v = std::make_unique<TrainValidation>();
  v->latent_shape_ = std::move(latent_shape);
  if (ctx.params().contains("validation_steps")) {
    v->sampling_steps_ = static_cast<int>(ctx.param_int("validation_steps"));
  }
  v->seed_ = static_cast<uint64_t>(ctx.param_int("validation_seed"));
  v->folder_ = ctx.param_path("validation_folder");
  return std::unique_ptr<TrainValidation>(std::move(v));
}

void TrainValidation::run(const engine::NodeContext& ctx, int step, int steps, wan::WanModel model,
                          const wan::AttentionChoice& attention) {
  c10::InferenceMode inference;
  const Conditioning& prompt = ctx.input_as<Conditioning>("validation");
  const c10::Device device = model->device();
  sampling::FlowSampleOptions o;
  o.steps = sampling_steps_;
  if (!dmd_timesteps_.empty()) {
    o.solver = sampling::SolverKind::Dmd;
    o.dmd_timesteps = dmd_timesteps_;
    o.steps = static_cast<int>(dmd_timesteps_.size());
  }
  o.guide_scale = 1.0;
  o.seed = seed_;
  o.latent_shape = latent_shape_;
  o.device = device;
  o.is_cancelled = [&ctx] { return ctx.cancelled(); };
  sampling::WanVelocityOptions vo;
  vo.context = prompt.context.to(device);
  if (condition_.defined()) vo.condition = condition_.to(device);
  vo.attention = attention.prepare(model->config(), device, model->compute_dtype(), latent_shape_);
  ctx.log_info("Validation at step " + std::to_string(step) + ": sampling " + std::to_string(o.steps) + " steps.");
  const at::Tensor latent = sampling::flow_sample(sampling::make_wan_velocity(model, std::move(vo)), o);
  // Rank 0 shows and writes.
  if (attention.sequence_parallel != nullptr && attention.sequence_parallel->rank() > 0) return;
  if (!ctx.has_input("vae")) {
    Video video;
    video.frames = preview_frame(latent);
    const std::size_t bytes = video.frames.rgb.size();
    ctx.emit_step_preview(engine::make_value(kVideoType, std::move(video), bytes), step, steps);
    return;
  }
  const VaeHandle& vae = ctx.input_as<VaeHandle>("vae");
  vae::VaeDecodeOptions decode;
  decode.output_device = c10::Device(c10::kCPU);
  const at::Tensor clip = vae.vae->decode(latent.unsqueeze(0).to(vae.device, vae.dtype), {}, decode);
  Video video;
  video.frames = video_to_frames(clip);
#ifdef VIDGRAPH_HAVE_MEDIA
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  char name[32];
  std::snprintf(name, sizeof name, "step_%06d.mp4", step);
  media::ExportOptions e;
  e.path = (std::filesystem::path(folder_) / name).string();
  e.fps = video.fps;
  e.workflow_json = ctx.workflow_json();
  std::string error, path;
  if (media::export_video(video.frames, e, &error, nullptr, &path)) {
    written_.push_back(path);
    ctx.wrote(path);
    ctx.log_info("Validation clip of step " + std::to_string(step) + ": " + path + ".");
  } else {
    ctx.log_warn("Could not write the validation clip of step " + std::to_string(step) + ": " + error);
  }
#endif
  const std::size_t bytes = video.frames.rgb.size();
  ctx.emit_step_preview(engine::make_value(kVideoType, std::move(video), bytes), step, steps);
}

}  // namespace vidgraph::nodes
