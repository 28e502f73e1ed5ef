#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <c10/core/DeviceType.h>

#include "models/train/trainer_parts.h"

namespace vidgraph::train {

namespace {

std::string shape_text(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  }
  return s + "]";
}

std::string shape_text(const at::Tensor& t) { return shape_text(t.sizes()); }

void validate_sample(const wan::WanConfig& c, const TrainingSample& s, size_t index) {
  const std::string who = "Training sample " + std::to_string(index) + (s.name.empty() ? "" : " ('" + s.name + "')");
  require(s.latent.defined() && s.latent.dim() == 4 && s.latent.is_floating_point(),
          who + " needs a floating-point latent [C, F, h, w]" +
              (s.latent.defined() ? ", got " + shape_text(s.latent) : ", got none") + ".");
  const auto& p = c.patch_size;
  require(s.latent.size(0) == c.out_dim, who + " has " + std::to_string(s.latent.size(0)) +
                                             " latent channels; the model takes " + std::to_string(c.out_dim) + ".");
  require_image_condition(c, s.condition, s.latent.sizes(), who,
                          "encode the clips with Encode Dataset's mode i2v and the model's Wan2.1 VAE.");
  require(s.latent.size(1) % p[0] == 0 && s.latent.size(2) % p[1] == 0 && s.latent.size(3) % p[2] == 0 &&
              s.latent.size(2) > 0 && s.latent.size(3) > 0,
          who + " latent " + shape_text(s.latent) + " is not a whole number of patches (" + std::to_string(p[0]) +
              ", " + std::to_string(p[1]) + ", " + std::to_string(p[2]) + ") in frames, height and width.");
  require_text_context(c, s.context, who + " needs a");
  if (s.clean_first_frame()) {
    require(s.latent.size(1) >= 2,
            who + " is image-to-video but has 1 latent frame: frame 0 is the clean image, so nothing is left to "
                  "learn from; give it at least 2 latent frames.");
    require(p[0] == 1, who + " is image-to-video, which needs a model with temporal patch 1.");
  }
}

void validate_method(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                     const std::vector<TrainingSample>& samples, const TrainOptions& o) {
  // The first sample's shape: every sample's was checked before.
  validate_attention_method(model, backend, o.method, o.method_params, o.sparsity, samples.front().latent.sizes(),
                            "Training", "TrainOptions::sparsity");
}

}  // namespace

void require(bool ok, const std::string& sentence) {
  if (!ok) {
    throw std::invalid_argument(sentence);
  }
}

void require_text_context(const wan::WanConfig& c, const at::Tensor& t, const std::string& needs,
                          const std::string& advice) {
  require(t.defined() && t.dim() == 2 && t.size(1) == c.text_dim && t.size(0) >= 1 && t.size(0) <= c.text_len,
          needs + " text context [L, " + std::to_string(c.text_dim) + "] with 1 <= L <= " + std::to_string(c.text_len) +
              ", got " + (t.defined() ? shape_text(t) : "none") + advice + ".");
}

void require_image_condition(const wan::WanConfig& c, const at::Tensor& condition, at::IntArrayRef latent_shape,
                             const std::string& who, const std::string& advice) {
  const int64_t channels = c.condition_channels();
  require(channels == 0 || condition.defined(),
          who + " has no image conditioning, which this model takes beside its latent (in_dim " +
              std::to_string(c.in_dim) + ": Wan2.2-I2V-A14B); " + advice);
  if (!condition.defined()) return;
  require(channels > 0, who + " carries image conditioning, which this model does not take (in_dim " +
                            std::to_string(c.in_dim) + "); leave it out for this model.");
  std::vector<int64_t> want = latent_shape.vec();
  want.at(0) = channels;
  require(condition.sizes() == at::IntArrayRef(want),
          who + "'s image conditioning is not " + shape_text(want) + ": got " + shape_text(condition) +
              ", which does not match its latent " + shape_text(latent_shape) + ".");
}

void validate_attention_method(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                               const std::string& method, const plugin::ParamMap& method_params,
                               const SparsitySchedule& sparsity, at::IntArrayRef latent_shape,
                               const std::string& who, const std::string& sparsity_field) {
  if (backend == nullptr) {
    require(method == "full", who + " method '" + method +
                                  "' needs the attention plugin; none was given (only 'full' runs without one).");
    return;
  }
  const auto methods = backend->methods();
  const plugin::MethodInfo* info = plugin::find_method(methods, method);
  require(info != nullptr, "The attention plugin has no method '" + method + "'; use full, vsa or sla_star.");
  const wan::AttentionChoice choice{backend, method, method_params};
  plugin::PrepareRequest request = choice.request(model.config(), model.device(), model.compute_dtype(), latent_shape);
  const auto check = [&](const plugin::PrepareRequest& r) {
    const plugin::PrepareResult p = backend->prepare(r);
    require(p.prepared != nullptr, who + " with attention method '" + method + "' cannot run: " + p.error + ".");
  };
  if (!has_sparsity(*info)) {
    check(request);
    return;
  }
  require(method_params.count("sparsity") == 0,
          "Set the sparsity of '" + method + "' through " + sparsity_field + " (a schedule), not method_params.");
  require(sparsity.steps >= 0, "The sparsity schedule's steps must be 0 or more.");
  for (double end : {sparsity.start, sparsity.target}) {
    request.params["sparsity"] = end;
    check(request);
  }
}

plugin::MethodInfo training_method(plugin::AttentionBackend* backend, const std::string& method) {
  if (backend != nullptr) {
    const std::vector<plugin::MethodInfo> methods = backend->methods();
    if (const plugin::MethodInfo* info = plugin::find_method(methods, method)) return *info;
  }
  plugin::MethodInfo none;
  none.name = method;
  return none;
}

bool has_sparsity(const plugin::MethodInfo& method) {
  return std::any_of(method.params.begin(), method.params.end(),
                     [](const plugin::ParamDescriptor& d) { return d.name == "sparsity"; });
}

// The most times one step may pass each training sample (batch x accumulation / samples).
constexpr int64_t kMostPassesPerSample = 64;

void validate_training(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                       const std::vector<TrainingSample>& samples, const TrainOptions& o) {
  require(o.steps >= 1, "Training needs at least 1 step, got " + std::to_string(o.steps) + ".");
  require(model.options.offload_blocks == 0,
          "The model offloads " + std::to_string(model.options.offload_blocks) +
              " blocks to host memory (block swap), which is for sampling; load it with offload_blocks 0 to train.");
  require(o.batch >= 1, "The batch size must be at least 1, got " + std::to_string(o.batch) + ".");
  require(o.accumulation >= 1, "Gradient accumulation must be at least 1, got " + std::to_string(o.accumulation) + ".");
  require(o.warmup_steps >= 0 && o.warmup_steps <= o.steps,
          "Warm-up steps must lie in [0, steps = " + std::to_string(o.steps) + "], got " +
              std::to_string(o.warmup_steps) + ".");
  require(o.lr_schedule == "constant" || o.lr_schedule == "cosine",
          "Unknown learning-rate schedule '" + o.lr_schedule + "'; use constant or cosine.");
  require(o.lr > 0, "The learning rate must be positive.");
  require(o.weight_decay >= 0, "Weight decay must be 0 or more.");
  require(o.shift > 0, "The timestep shift must be positive.");
  require(o.sigma_min >= 0 && o.sigma_min < o.sigma_max && o.sigma_max <= 1,
          "The noise levels to train on must satisfy 0 <= sigma_min < sigma_max <= 1, got [" +
              std::to_string(o.sigma_min) + ", " + std::to_string(o.sigma_max) + "].");
  require(o.save_every >= 0, "save_every must be 0 or more.");
  require(o.save_every == 0 || !o.checkpoint_dir.empty(),
          "save_every is set but checkpoint_dir is empty: name a folder for the checkpoints.");
  if (o.mode == TrainMode::Lora) {
    require(o.lora.rank >= 1, "LoRA rank must be at least 1, got " + std::to_string(o.lora.rank) + ".");
    require(o.lora.alpha > 0, "LoRA alpha must be positive.");
    lora_target_modules(model, o.lora);  // throws for a pattern that matches nothing
  }
  require(o.caption_dropout >= 0 && o.caption_dropout < 1,
          "Caption dropout must lie in [0, 1), got " + std::to_string(o.caption_dropout) + ".");
  if (o.caption_dropout > 0) {
    require_text_context(model.config(), o.empty_context, "Caption dropout needs the empty prompt's",
                         "; encode \"\" with the same text encoder");
  }
  require(!samples.empty(), "Training needs at least one sample; none were given.");
  // Samples pass one at a time, so batch and accumulation cost time, not memory: a step that passes
  // each sample dozens of times (new noise each) runs for minutes and teaches nothing more.
  const int64_t per_step = static_cast<int64_t>(o.batch) * o.accumulation;
  const int64_t most = kMostPassesPerSample * static_cast<int64_t>(samples.size());
  require(per_step <= most,
          "One step would pass " + std::to_string(per_step) + " samples through the model (batch " +
              std::to_string(o.batch) + " x accumulation " + std::to_string(o.accumulation) + "), each of the " +
              std::to_string(samples.size()) + " training samples about " +
              std::to_string(per_step / static_cast<int64_t>(samples.size())) + " times; lower batch or "
              "accumulation to at most " + std::to_string(most) + " samples a step, or train on more samples.");
  for (size_t i = 0; i < samples.size(); ++i) {
    validate_sample(model.config(), samples[i], i);
  }
  validate_method(model, backend, samples, o);
  require(o.resume_from.empty() || std::filesystem::is_regular_file(o.resume_from),
          "The checkpoint to resume from, '" + o.resume_from + "', does not exist or is not a file.");
}

}  // namespace vidgraph::train
