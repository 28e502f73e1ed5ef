// Distill Wan: step distillation (DMD2, models/train/distill.h) of a copy of the DiT into a few-step
// student without guidance. The prompts are a list (the `prompts` text and `prompts_file`, one per
// line, encoded once by the text encoder) and/or the captions of Encode Dataset's TRAINING_SET (with
// their first frames when encoded for image-to-video); no clips are needed. Each step posts the generator loss, the critic loss and the DMD gradient norm as
// progress metrics. The student is written as a LoRA (ComfyUI names, Load LoRA reads it) through a
// temporary published by `naming`, with `<name>.json` beside it recording the run; the MODEL output
// is the copy with the student attached, to be sampled with Wan Sampler's dmd scheduler at the same
// student_timesteps. The input MODEL is never modified. Cancel stops between steps and leaves a
// resumable checkpoint, named in the error. The student's method params (sparsity included) come
// from the plugin through the same bridge as Wan Sampler's; the teacher and the critic run `full`.
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "models/train/distill.h"
#include "models/wan/wan_config.h"
#include "nodes/attention_params_bridge.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"
#include "nodes/input_file.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/sampler_dmd.h"
#include "nodes/sampling/sampler_setup.h"
#include "nodes/training/noise_levels.h"
#include "nodes/training/train_validation.h"
#include "nodes/training/training_output.h"
#include "nodes/training/training_set.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

using engine::ParamSpec;

namespace {

// The non-empty lines of `text`, trimmed.
std::vector<std::string> prompt_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos) lines.push_back(line.substr(first, line.find_last_not_of(" \t\r") - first + 1));
  }
  return lines;
}

// The prompt texts of the `prompts` param and of the file `prompts_file` names.
engine::Result<std::vector<std::string>> prompt_texts(const engine::NodeContext& ctx) {
  std::vector<std::string> texts = prompt_lines(ctx.param_string("prompts"));
  if (ctx.param_string("prompts_file").empty()) return texts;
  const std::string path = ctx.param_path("prompts_file");
  const std::string bad = check_input_path("prompts_file", path, InputKind::File, "a text file, one prompt per line");
  if (!bad.empty()) return node_error(ctx, bad);
  std::ifstream file(path, std::ios::binary);
  if (!file) return node_error(ctx, "Cannot read the prompt file '" + path + "'; check prompts_file.");
  std::stringstream content;
  content << file.rdbuf();
  for (std::string& line : prompt_lines(content.str())) texts.push_back(std::move(line));
  return texts;
}

// The training set's captions, encoded by Encode Dataset, with their clips (where a low-noise
// expert's chain starts); a sample encoded for image-to-video (its mode i2v) gives its first latent
// frame too, the image the student then learns to animate; for a model that takes image
// conditioning (Wan2.2-I2V-A14B), the sample's conditioning instead.
std::vector<train::DistillPrompt> set_prompts(const TrainingSet& set, const wan::WanConfig& config) {
  const bool conditioned = config.condition_channels() > 0;
  std::vector<train::DistillPrompt> prompts;
  for (const TrainingSampleFile& file : set.samples) {
    const TrainingSampleData data = read_training_sample(file.path);
    const bool first = file.image_to_video && !conditioned;
    prompts.push_back({data.context, first ? data.latent.narrow(1, 0, 1).contiguous() : at::Tensor(), file.source,
                       data.latent, conditioned ? data.condition : at::Tensor()});
  }
  return prompts;
}

// Every prompt of the run, each encoded once; an error before any step when there is none or when
// texts have no text encoder.
engine::Result<std::vector<train::DistillPrompt>> distill_prompts(const engine::NodeContext& ctx,
                                                                 const wan::WanConfig& config) {
  auto texts = prompt_texts(ctx);
  if (!texts.ok()) return texts.error();
  std::vector<train::DistillPrompt> prompts;
  if (ctx.has_input("training_set")) prompts = set_prompts(ctx.input_as<TrainingSet>("training_set"), config);
  if (!texts->empty() && !ctx.has_input("text_encoder")) {
    return node_error(ctx, "The prompts need a text encoder; connect Load Wan Model's text_encoder to "
                           "text_encoder.");
  }
  for (const std::string& text : *texts) {
    prompts.push_back({ctx.input_as<TextEncoderHandle>("text_encoder").encode(text)[0].to(at::kFloat), {}, text});
  }
  if (prompts.empty()) {
    return node_error(ctx, "Distillation needs at least one prompt, and the prompt list is empty; write "
                           "prompts (one per line), name a prompts_file, or connect a training_set.");
  }
  return prompts;
}

// The teacher's negative context: the `negative` prompt encoded (empty = Wan's default negative
// prompt), else the training set's dropout prompt; undefined when neither is at hand.
at::Tensor negative_context(const engine::NodeContext& ctx) {
  if (ctx.has_input("text_encoder")) {
    std::string text = ctx.param_string("negative");
    if (text.empty()) text = wan::default_negative_prompt();
    return ctx.input_as<TextEncoderHandle>("text_encoder").encode(text)[0].to(at::kFloat);
  }
  if (ctx.has_input("training_set")) return ctx.input_as<TrainingSet>("training_set").dropout_context;
  return {};
}

// A method's params read from the node params; its sparsity (when it has one) moved out to `sparsity`.
engine::Result<plugin::ParamMap> method_params(const engine::NodeContext& ctx, const AttentionParamSchema& schema,
                                               const std::string& method, std::optional<double>* sparsity) {
  auto params = schema.params_for(method, ctx.params());
  if (!params.ok()) return node_error(ctx, params.error().message);
  if (auto it = params->find("sparsity"); it != params->end()) {
    *sparsity = plugin::param_as_double(*params, "sparsity");
    params->erase(it);
  }
  return params;
}

// The student's method (its sparsity becomes the schedule) and the teacher's and critic's, which
// read the same node params (sparsity, tile, ...).
engine::Status attention_methods(const engine::NodeContext& ctx, const AttentionParamSchema& schema,
                                 train::DistillOptions& o) {
  o.method = ctx.param_string("method");
  std::optional<double> sparsity, teacher_sparsity;
  auto student = method_params(ctx, schema, o.method, &sparsity);
  if (!student.ok()) return student.error();
  o.method_params = std::move(*student);
  if (sparsity) o.sparsity = {*sparsity, *sparsity, 0};
  o.teacher_method = ctx.param_string("teacher_method");
  auto teacher = method_params(ctx, schema, o.teacher_method, &teacher_sparsity);
  if (!teacher.ok()) return teacher.error();
  o.teacher_method_params = std::move(*teacher);
  o.teacher_sparsity = teacher_sparsity.value_or(0.0);
  return {};
}

engine::Result<train::DistillOptions> distill_options(const engine::NodeContext& ctx,
                                                      const AttentionParamSchema& schema, const DitHandle& dit) {
  train::DistillOptions o;
  const NoiseLevels levels = noise_levels(ctx, dit, "Distilling");
  o.sigma_min = levels.sigma_min;
  o.sigma_max = levels.sigma_max;
  auto shape = video_latent_shape(ctx, dit.model->config(), static_cast<int>(ctx.param_int("width")),
                                  static_cast<int>(ctx.param_int("height")), static_cast<int>(ctx.param_int("frames")));
  if (!shape.ok()) return shape.error();
  o.latent_shape = std::move(*shape);
  if (engine::Status s = attention_methods(ctx, schema, o); !s.ok()) return s.error();
  const std::string timesteps = ctx.param_string("student_timesteps");
  std::string error;
  if (!parse_dmd_timesteps(timesteps, &o.student_timesteps, &error)) {
    return node_error(ctx, "student_timesteps '" + timesteps + "' is not a valid step list (" + error +
                               "); give decreasing timesteps out of 1000, e.g. 1000,757,522.");
  }
  o.guidance = ctx.param_float("guidance");
  o.student_lora.rank = static_cast<int>(ctx.param_int("student_rank"));
  o.student_lora.alpha = o.student_lora.rank;
  o.critic_lora.rank = static_cast<int>(ctx.param_int("critic_rank"));
  o.critic_lora.alpha = o.critic_lora.rank;
  o.student_lora.targets = o.critic_lora.targets = split_list(ctx.param_string("lora_targets"));
  o.steps = static_cast<int>(ctx.param_int("steps"));
  o.critic_updates = static_cast<int>(ctx.param_int("critic_updates"));
  o.student_lr = ctx.param_float("student_lr");
  o.critic_lr = ctx.param_float("critic_lr");
  o.grad_clip = ctx.param_float("grad_clip");
  o.regression_weight = ctx.param_float("regression_weight");
  o.regression_steps = static_cast<int>(ctx.param_int("regression_steps"));
  o.seed = static_cast<uint64_t>(ctx.param_int("seed"));
  o.checkpointing = ctx.param_bool("checkpointing");
  o.save_every = static_cast<int>(ctx.param_int("save_every"));
  o.checkpoint_dir = ctx.param_path("checkpoint_folder");
  o.resume_from = ctx.param_string("resume").empty() ? std::string() : ctx.param_path("resume");
  const bool regression = o.regression_weight > 0;
  o.on_step = [&ctx, regression](const train::DistillStep& s) {
    std::string text = "generator " + format_number("%.6f", s.generator_loss) + " critic " +
                       format_number("%.6f", s.critic_loss) + " dmd " + format_number("%.4g", s.dmd_grad_norm);
    engine::ProgressMetrics metrics{
        {"generator_loss", s.generator_loss}, {"critic_loss", s.critic_loss}, {"dmd_grad_norm", s.dmd_grad_norm}};
    if (regression) {
      text += " regression " + format_number("%.6f", s.regression_loss);
      metrics.emplace_back("regression_loss", s.regression_loss);
    }
    ctx.progress(s.step, s.steps, text, metrics);
  };
  o.is_cancelled = [&ctx] { return ctx.cancelled(); };
  return o;
}

// `<output>.json` beside the published student: what made it and how the run went.
void write_record(const engine::NodeContext& ctx, const std::string& student, const train::DistillOptions& o,
                  const train::DistillResult& r, size_t prompt_count, double seconds) {
  const nlohmann::json record = {
      {"format", "vidgraph-distill-record"},
      {"student", fs::path(student).filename().string()},
      {"node", ctx.node_id()},
      {"params", ctx.params()},
      {"prompts", prompt_count},
      {"latent_shape", o.latent_shape},
      {"student_timesteps", o.student_timesteps},
      {"steps_done", r.steps_done},
      {"seconds", seconds},
      {"generator_losses", r.generator_losses},
      {"critic_losses", r.critic_losses},
      {"dmd_grad_norms", r.dmd_grad_norms}};
  OutputTarget target;
  target.path = fs::path(student).replace_extension(".json").string();
  target.naming = Naming::Overwrite;  // the record belongs to the student just published
  target.kind = OutputKind::Json;
  const std::string text = record.dump(2) + "\n";
  const Published published = write_file_atomically(target, text.data(), text.size());
  if (published.error.empty()) ctx.wrote(published.path);
  else ctx.log_warn("Could not write the distillation record: " + published.error);
}

engine::Error cancelled_error(const engine::NodeContext& ctx, const train::DistillResult& result) {
  if (!result.checkpoint_path.empty()) ctx.wrote(result.checkpoint_path);
  const std::string where =
      result.checkpoint_path.empty()
          ? "no checkpoint was written (set checkpoint_folder)"
          : "resumable checkpoint '" + result.checkpoint_path + "' (set resume to it to continue)";
  const std::string message =
      "Distillation cancelled after step " + std::to_string(result.steps_done) + "; " + where + ".";
  ctx.log_warn(message);
  return node_error(ctx, message);
}

// Runs the distillation on `model` (a copy); the result or the failure as a sentence.
engine::Result<train::DistillResult> run_distill(const engine::NodeContext& ctx, wan::WanModelImpl& model,
                                                 plugin::AttentionBackend* backend,
                                                 const std::vector<train::DistillPrompt>& prompts,
                                                 const train::DistillOptions& options) {
  try {
    return train::distill(model, backend, prompts, options);
  } catch (const c10::Error& e) {
    return node_error(ctx, std::string("Distillation failed: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Distillation failed: ") + e.what());
  }
}

engine::Result<engine::ValueMap> compute_distill_wan(engine::NodeContext& ctx, const AttentionParamSchema& schema,
                                                     const AttentionSource& attention) {
  const DitHandle& dit = ctx.input_as<DitHandle>("model");
  if (!attention.backend) return node_error(ctx, "No attention plugin for distillation: " + attention.missing);
  auto prompts = distill_prompts(ctx, dit.model->config());
  if (!prompts.ok()) return prompts.error();
  auto distilled_options = distill_options(ctx, schema, dit);
  if (!distilled_options.ok()) return distilled_options.error();
  train::DistillOptions& options = *distilled_options;
  options.negative_context = negative_context(ctx);
  auto validation = TrainValidation::make(ctx, options.latent_shape);
  if (!validation.ok()) return validation.error();
  // A deep copy: the input MODEL is shared with other nodes and the cache.
  auto model = std::dynamic_pointer_cast<wan::WanModelImpl>(dit.model->clone());
  if (TrainValidation* v = validation->get()) {
    v->use_dmd(options.student_timesteps);
    if (prompts->front().condition.defined()) v->use_condition(prompts->front().condition);
    options.validate_every = static_cast<int>(ctx.param_int("validate_every"));
    options.on_validate = [&ctx, v, model, steps = options.steps](int step, const wan::AttentionChoice& student) {
      v->run(ctx, step, steps, wan::WanModel(model), student);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = run_distill(ctx, *model, attention.backend, *prompts, options);
  if (!result.ok()) return result.error();
  if (result->cancelled) return cancelled_error(ctx, *result);
  auto written = write_weights(ctx, *model, train::TrainMode::Lora, result->frozen_extras);
  if (!written.ok()) return written.error();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_record(ctx, *written, options, *result, prompts->size(), seconds);
  ctx.log_info("Distilled " + std::to_string(result->steps_done) + " steps in " + format_number("%.1f", seconds) +
               " s over " + std::to_string(prompts->size()) + " prompts; wrote the student " + *written + ".");
  DitHandle student{model, *written, dit.device, dit.dtype, dit.expert};
  const std::size_t bytes = module_bytes(*model);
  return engine::ValueMap{{"model", engine::make_value(kModelType, std::move(student), bytes)},
                          {"path", engine::make_value(kPathType, *written)}};
}

std::vector<ParamSpec> distill_params(const std::vector<std::string>& methods, const std::string& default_method) {
  return {
      ParamSpec::text("prompts", "", "The distillation prompts, one per line (encoded once by the text encoder)."),
      ParamSpec::file_path("prompts_file", "", "Text (*.txt)", "A file of more prompts, one per line; empty = none."),
      ParamSpec::text("negative", "", "The teacher's negative prompt; empty = the Wan2.2 default negative prompt."),
      ParamSpec::enumeration("method", methods, default_method, "The student's self-attention method."),
      ParamSpec::enumeration("teacher_method", methods, default_method,
                             "The teacher's and the critic's self-attention: full for models trained with full "
                             "attention (the Wan releases), the sparse method a model was trained with otherwise "
                             "(the demo model: vsa), at the same sparsity and tile params as the student."),
      ParamSpec::integer("steps", 200, 1, 1000000, "Generator (student) updates."),
      ParamSpec::integer("critic_updates", 5, 1, 100, "Critic updates per student update (two time-scale rule)."),
      ParamSpec::real("student_lr", 1e-4, 1e-9, 1.0, "The student's learning rate (AdamW; must be positive)."),
      ParamSpec::real("critic_lr", 1e-4, 1e-9, 1.0, "The critic's learning rate (AdamW; must be positive)."),
      ParamSpec::integer("student_rank", 32, 1, 1024, "The student's LoRA rank (alpha = rank)."),
      ParamSpec::integer("critic_rank", 32, 1, 1024, "The critic's LoRA rank (alpha = rank)."),
      ParamSpec::string("lora_targets", "",
                        "The linear layers both LoRAs adapt, as comma-separated module patterns (self_attn.*, "
                        "cross_attn.*, ffn.*, blocks.3.self_attn.q); empty = self-attention q, k, v and o."),
      ParamSpec::real("guidance", 3.5, 1.0, 30.0, "The teacher's classifier-free guidance (1: none)."),
      ParamSpec::string("student_timesteps", "1000,757,522",
                        "The student's steps, decreasing timesteps out of 1000 (sample it with Wan Sampler's "
                        "dmd scheduler and the same list)."),
      ParamSpec::integer("width", 1280, 32, 4096, "Width of the student's samples (a multiple of 32)."),
      ParamSpec::integer("height", 704, 32, 4096, "Height of the student's samples (a multiple of 32)."),
      ParamSpec::integer("frames", 121, 1, 1001, "Frames of the student's samples (4k + 1)."),
      ParamSpec::seed("seed", 0, "Noise, timesteps, prompt order and LoRA init."),
      ParamSpec::boolean("checkpointing", false, "Gradient checkpointing per block (less memory, slower)."),
      ParamSpec::integer("save_every", 0, 0, 1000000,
                         "Resumable checkpoint every N steps (0: only at the end or on cancel)."),
      ParamSpec::folder_path("checkpoint_folder", "{output}/distill-checkpoints",
                             "Where resumable checkpoints go.").written(),
      ParamSpec::file_path("resume", "", "Safetensors (*.safetensors)",
                           "A checkpoint to continue from; empty = start fresh."),
      ParamSpec::file_path("output", "{output}/student.safetensors", "Safetensors (*.safetensors)",
                           "The student LoRA (ComfyUI names); its run record is written beside it as .json.")
          .written(),
      weights_dtype_param(),
      naming_param(),
      ParamSpec::real("grad_clip", 1.0, 0.0, 1000.0, "Global gradient-norm clip of each role (0: none)."),
      ParamSpec::real("regression_weight", 0.0, 0.0, 1000.0,
                      "Adds weight x the mean squared distance of the student's sample to the teacher's guided "
                      "sample from the same noise (DMD1's regression loss); 0 = DMD2 alone."),
      ParamSpec::integer("regression_steps", 8, 1, 1000, "Euler steps of the teacher's sample for the regression loss."),
  };
}

}  // namespace

engine::NodeType distill_wan_node(const AttentionSource& attention) {
  const std::vector<plugin::MethodInfo> methods = attention.methods();
  std::vector<std::string> names;
  for (const auto& m : methods) names.push_back(m.name);
  const plugin::MethodInfo* dense = plugin::find_method_of_kind(methods, plugin::MethodKind::Dense);
  engine::NodeType t;
  t.name = "DistillWan";
  t.display_name = "Distill Wan";
  t.category = "training";
  t.description = "Step distillation (DMD2): a few-step student without guidance learns from the model as a "
                  "teacher with guidance, data-free from prompts. The student and the critic are LoRA adapters "
                  "over one copy of the weights. Generator loss, critic loss and DMD gradient norm per step in "
                  "the progress; cancel leaves a resumable checkpoint. The student is written as a LoRA and is "
                  "the model output: sample it with Wan Sampler's dmd scheduler at student_timesteps, guidance 1.";
  t.inputs = {{"model", kModelType, false, "The DiT from Load Wan Model (the teacher)."},
              {"text_encoder", kTextEncoderType, true, "Encodes the prompts and the negative prompt."},
              {"training_set", kTrainingSetType, true,
               "More prompts: Encode Dataset's encoded captions and their clips (a low-noise expert's few "
               "steps start from them); with its mode i2v, each clip's first frame too (image-to-video "
               "distillation, at the clips' width and height)."},
              {"validation", kConditioningType, true, "A prompt from Encode Text for the validation clips."},
              {"vae", kVaeType, true, "Decodes the validation clips (without it their latent is previewed)."}};
  t.outputs = {{"model", kModelType, false, "The distilled copy (student LoRA attached), for Wan Sampler."},
               {"path", kPathType, false, "The written student LoRA file."}};
  t.params = distill_params(names, dense ? dense->name : names.front());
  const std::vector<ParamSpec> levels = noise_level_params();
  t.params.insert(std::find_if(t.params.begin(), t.params.end(),
                               [](const ParamSpec& p) { return p.name == "width"; }),
                  levels.begin(), levels.end());
  for (ParamSpec& p : validation_params()) {
    if (p.name != "validation_steps") t.params.push_back(std::move(p));  // the student's own steps
  }
  std::vector<std::string> taken;
  for (const auto& p : t.params) taken.push_back(p.name);
  auto schema = std::make_shared<const AttentionParamSchema>(methods, taken);
  // The method's params (sparsity among them) right after the method.
  auto after_method = std::find_if(t.params.begin(), t.params.end(),
                                   [](const ParamSpec& p) { return p.name == "method"; }) + 1;
  t.params.insert(after_method, schema->specs().begin(), schema->specs().end());
  for (ParamSpec& p : t.params) {
    for (const char* advanced : {"negative", "checkpointing", "grad_clip", "critic_updates", "regression_weight",
                                 "regression_steps"}) {
      if (p.name == advanced) p.advanced = true;
    }
  }
  const engine::FingerprintFn output = output_fingerprint("output");
  t.fingerprint = [output](const nlohmann::json& params, const engine::RunOptions& options) {
    const bool resumes = !params.value("resume", std::string()).empty();
    const bool reads = !params.value("prompts_file", std::string()).empty();
    return output(params, options) + "|" + (resumes ? file_param_fingerprint(params, options, "resume") : "") +
           "|" + (reads ? file_param_fingerprint(params, options, "prompts_file") : "");
  };
  t.preflight = writer_preflight("output", weights_kind);
  t.compute = [schema, attention](engine::NodeContext& ctx) { return compute_distill_wan(ctx, *schema, attention); };
  return t;
}

}  // namespace vidgraph::nodes
