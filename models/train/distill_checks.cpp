// validate_distill and the distillation state file (distill_parts.h).
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "models/io/safetensors.h"
#include "models/io/state_dict_file.h"
#include "models/sampling/dmd_solver.h"
#include "models/train/distill_parts.h"
#include "models/train/train_state_io.h"

namespace vidgraph::train {

namespace {

constexpr const char* kStateKey = "vidgraph_distill_state";

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void validate_role(const wan::WanModelImpl& model, const std::string& role, TrainMode mode, const LoraOptions& lora) {
  require(mode == TrainMode::Lora, "A full copy of the " + role +
                                       " is not supported yet; distil with a LoRA " + role +
                                       " (it needs no second copy of the DiT).");
  require(lora.rank >= 1,
          "The " + role + "'s LoRA rank must be at least 1, got " + std::to_string(lora.rank) + ".");
  require(lora.alpha > 0, "The " + role + "'s LoRA alpha must be positive.");
  lora_target_modules(model, lora);  // throws for a pattern that matches nothing
}

void validate_latent_shape(const wan::WanConfig& c, const std::vector<int64_t>& s) {
  const auto& p = c.patch_size;
  require(s.size() == 4, "Distillation needs the student's latent shape [C, F, h, w]; give latent_shape.");
  require(s[0] == c.out_dim, "The latent shape has " + std::to_string(s[0]) + " channels; the model takes " +
                                 std::to_string(c.out_dim) + ".");
  require(s[1] >= 1 && s[2] >= 1 && s[3] >= 1 && s[1] % p[0] == 0 && s[2] % p[1] == 0 && s[3] % p[2] == 0,
          "The latent shape is not a whole number of patches (" + std::to_string(p[0]) + ", " +
              std::to_string(p[1]) + ", " + std::to_string(p[2]) + ") in frames, height and width.");
}

void validate_prompt(const wan::WanModelImpl& model, const DistillOptions& o, const DistillPrompt& p, size_t index) {
  const std::string who = "Prompt " + std::to_string(index) + (p.name.empty() ? "" : " ('" + p.name + "')");
  require_text_context(model.config(), p.context, who + " needs a");
  const auto& s = o.latent_shape;
  require_image_condition(model.config(), p.condition, s, who,
                          "distil it from an Encode Dataset training_set encoded with mode i2v and the model's "
                          "Wan2.1 VAE, whose clips carry it.");
  if (!p.first_frame.defined()) return;
  require(p.first_frame.dim() == 4 && p.first_frame.size(0) == s[0] && p.first_frame.size(1) == 1 &&
              p.first_frame.size(2) == s[2] && p.first_frame.size(3) == s[3],
          who + " has a first frame that is not a latent [" + std::to_string(s[0]) + ", 1, " + std::to_string(s[2]) +
              ", " + std::to_string(s[3]) + "] of the latent shape.");
  require(s[1] >= 2, who + " is image-to-video but the latent shape has 1 frame: give at least 2 latent frames.");
  require(model.config().patch_size[0] == 1, who + " is image-to-video, which needs a model with temporal patch 1.");
}

// Every student timestep on the expert's side (the sampler's rule: t >= boundary is the high-noise
// expert's), and a clip per prompt when the chain starts below 1000.
void validate_noise_levels(const DistillOptions& o, const std::vector<DistillPrompt>& prompts) {
  require(o.sigma_min >= 0 && o.sigma_min < o.sigma_max && o.sigma_max <= 1,
          "The noise levels to distil must satisfy 0 <= sigma_min < sigma_max <= 1, got [" +
              std::to_string(o.sigma_min) + ", " + std::to_string(o.sigma_max) + "].");
  const auto range = renoise_range(o);
  require(range.first < range.second, "The re-noising range [renoise_min, renoise_max] does not overlap the "
                                      "expert's noise levels; widen it.");
  const bool whole = o.sigma_min == 0.0 && o.sigma_max == 1.0;
  for (const double t : o.student_timesteps) {
    const double sigma = t / 1000.0;
    const bool inside = sigma >= o.sigma_min && (sigma < o.sigma_max || o.sigma_max == 1.0);
    require(inside, "The student's timestep " + number(t) + " is outside the expert's noise levels (" +
                        (o.sigma_min > 0 ? "from " + number(1000 * o.sigma_min) + " to 1000"
                                         : "below " + number(1000 * o.sigma_max)) +
                        "); give student_timesteps on its side of the boundary.");
  }
  require(whole || o.regression_weight == 0,
          "The regression to the teacher samples every noise level, which one expert does not cover; set "
          "regression_weight 0 to distil an expert.");
  if (o.student_timesteps.front() >= 1000.0) return;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const DistillPrompt& p = prompts[i];
    const std::string who = "Prompt " + std::to_string(i) + (p.name.empty() ? "" : " ('" + p.name + "')");
    require(p.clip.defined(), who + " has no clip, and the student's chain starts at timestep " +
                                  number(o.student_timesteps.front()) +
                                  ", from a clip noised there (the high-noise expert's output is not at hand); "
                                  "distil a low-noise expert from a training set's captions and clips.");
    require(p.clip.sizes().vec() == o.latent_shape,
            who + "'s clip is a latent " + model_io::shape_string(p.clip) + ", not of the student's latent shape; encode the "
                  "training set at the student's width, height and frames.");
  }
}

nlohmann::json options_that_must_match(const DistillOptions& o, size_t prompt_count) {
  auto lora = [](const LoraOptions& l) {
    return nlohmann::json{{"rank", l.rank}, {"alpha", l.alpha}, {"targets", l.targets}};
  };
  return {{"student_lora", lora(o.student_lora)},
          {"critic_lora", lora(o.critic_lora)},
          {"method", o.method},
          {"teacher_method", o.teacher_method},
          {"seed", o.seed},
          {"latent_shape", o.latent_shape},
          {"student_timesteps", o.student_timesteps},
          {"random_exit", o.random_exit},
          {"critic_updates", o.critic_updates},
          {"guidance", o.guidance},
          {"shift", o.shift},
          {"renoise", {o.renoise_min, o.renoise_max}},
          {"noise_levels", {o.sigma_min, o.sigma_max}},
          {"regression", {o.regression_weight, o.regression_steps}},
          {"prompts", prompt_count}};
}

}  // namespace

std::pair<double, double> renoise_range(const DistillOptions& o) {
  const std::pair<double, double> side = flow_s_range(o.sigma_min, o.sigma_max, o.shift);
  return {std::max(o.renoise_min, side.first), std::min(o.renoise_max, side.second)};
}

void validate_distill(const wan::WanModelImpl& model, plugin::AttentionBackend* backend,
                      const std::vector<DistillPrompt>& prompts, const DistillOptions& o) {
  require(o.steps >= 1, "Distillation needs at least 1 step, got " + std::to_string(o.steps) + ".");
  require(model.options.offload_blocks == 0,
          "The model offloads " + std::to_string(model.options.offload_blocks) +
              " blocks to host memory (block swap), which is for sampling; load it with offload_blocks 0 to distil.");
  for (const auto& [name, linear] : wan_named_linears(model)) {
    require(!linear->adapter.attached(), "The teacher already carries a LoRA adapter (on '" + name +
                                             "'); merge it into the weights first, so that it is part of the "
                                             "frozen teacher.");
  }
  validate_role(model, "student", o.student_mode, o.student_lora);
  validate_role(model, "critic", o.critic_mode, o.critic_lora);
  require(o.critic_updates >= 1,
          "The critic needs at least 1 update per student update, got " + std::to_string(o.critic_updates) + ".");
  require(o.student_lr > 0 && o.critic_lr > 0, "The student's and the critic's learning rates must be positive.");
  require(o.weight_decay >= 0, "Weight decay must be 0 or more.");
  require(o.shift > 0, "The timestep shift must be positive.");
  require(o.renoise_min >= 0 && o.renoise_min < o.renoise_max && o.renoise_max <= 1,
          "The re-noising range must satisfy 0 <= renoise_min < renoise_max <= 1.");
  require(o.guidance >= 1, "The teacher's guidance must be 1 (none) or more, got " + std::to_string(o.guidance) + ".");
  require(o.regression_weight >= 0, "The regression weight must be 0 (off) or more.");
  require(o.regression_weight == 0 || o.regression_steps >= 1, "The regression's teacher needs at least 1 step.");
  require(o.save_every >= 0, "save_every must be 0 or more.");
  require(o.save_every == 0 || !o.checkpoint_dir.empty(),
          "save_every is set but checkpoint_dir is empty: name a folder for the checkpoints.");
  sampling::dmd_schedule(o.student_timesteps);  // throws a sentence for an empty or unordered list
  validate_latent_shape(model.config(), o.latent_shape);
  validate_noise_levels(o, prompts);
  if (o.guidance != 1.0) {
    require_text_context(model.config(), o.negative_context, "The teacher's guidance needs the negative prompt's",
                         "; encode the negative prompt (or \"\") with the same text encoder");
  }
  require(!prompts.empty(), "Distillation needs at least one prompt; the prompt list is empty.");
  for (size_t i = 0; i < prompts.size(); ++i) {
    validate_prompt(model, o, prompts[i], i);
  }
  validate_attention_method(model, backend, o.method, o.method_params, o.sparsity, o.latent_shape, "The student",
                            "DistillOptions::sparsity");
  validate_attention_method(model, backend, o.teacher_method, o.teacher_method_params,
                            {o.teacher_sparsity, o.teacher_sparsity, 0}, o.latent_shape, "The teacher",
                            "DistillOptions::teacher_sparsity");
  require(o.resume_from.empty() || std::filesystem::is_regular_file(o.resume_from),
          "The checkpoint to resume from, '" + o.resume_from + "', does not exist or is not a file.");
}

void write_distill_state(const std::string& path, const DistillRole& student, const DistillRole& critic,
                         const DistillOptions& options, size_t prompt_count, const DistillHistory& h) {
  model_io::NamedTensors tensors;
  nlohmann::json adam_steps = nlohmann::json::object();
  append_optimizer_state(tensors, adam_steps, "student.", student.trained, *student.optimizer);
  append_optimizer_state(tensors, adam_steps, "critic.", critic.trained, *critic.optimizer);
  const nlohmann::json meta = {{"format", "vidgraph-distill-state"},
                               {"version", 1},
                               {"step", h.step},
                               {"steps", options.steps},
                               {"generator_losses", h.generator_losses},
                               {"critic_losses", h.critic_losses},
                               {"dmd_grad_norms", h.dmd_grad_norms},
                               {"adamw_steps", adam_steps},
                               {"options", options_that_must_match(options, prompt_count)}};
  model_io::save_safetensors(path, tensors, {{kStateKey, meta.dump()}, {"format", "pt"}});
}

DistillHistory read_distill_state(const std::string& path, const DistillRole& student, const DistillRole& critic,
                                  const DistillOptions& options, size_t prompt_count) {
  const model_io::SafetensorsFile file = model_io::SafetensorsFile::open(path);
  const nlohmann::json meta = read_state_meta(file, path, kStateKey, "distillation", "distill-step-*.safetensors");
  // Options added after the first checkpoints were written: a checkpoint without one used its default.
  nlohmann::json saved = {{"teacher_method", "full"}, {"noise_levels", {0.0, 1.0}}};
  const nlohmann::json recorded = meta.value("options", nlohmann::json::object());
  if (recorded.is_object()) saved.update(recorded);
  check_saved_options(path, saved, options_that_must_match(options, prompt_count));
  return read_state_fields(path, "distillation", [&] {
    load_optimizer_state(file, path, meta.at("adamw_steps"), "student.", student.trained, *student.optimizer);
    load_optimizer_state(file, path, meta.at("adamw_steps"), "critic.", critic.trained, *critic.optimizer);
    DistillHistory h;
    h.step = meta.at("step").get<int>();
    h.generator_losses = meta.at("generator_losses").get<std::vector<double>>();
    h.critic_losses = meta.at("critic_losses").get<std::vector<double>>();
    h.dmd_grad_norms = meta.at("dmd_grad_norms").get<std::vector<double>>();
    return h;
  });
}

}  // namespace vidgraph::train
