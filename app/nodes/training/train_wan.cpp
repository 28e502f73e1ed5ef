// Train Wan: fine-tunes a copy of the DiT on an encoded training set with models/train (LoRA or
// full), posts every step's loss and learning rate as progress, and writes the LoRA (ComfyUI names)
// or the full checkpoint through a temporary published by its `naming`. The MODEL input is never
// modified (other nodes and the cache share it): training runs on a deep copy, which is the MODEL
// output. Cancel stops between steps and leaves a resumable checkpoint, named in the error.
// The method's params come from the plugin through the same bridge as Wan Sampler's
// (attention_params_bridge.h), except its sparsity, which the schedule sets at every step:
// sparsity_start and sparsity_target follow the plugin's sparsity rules. In a run of several ranks
// training is sequence-parallel over them (models/train), and rank 0 alone writes files.
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "models/train/trainer.h"
#include "nodes/attention_params_bridge.h"
#include "nodes/common/attention_plugin.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/files/writer_params.h"
#include "nodes/model/model_handles.h"
#include "nodes/training/noise_levels.h"
#include "nodes/training/train_validation.h"
#include "nodes/training/training_output.h"
#include "nodes/training/training_set.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

using engine::ParamSpec;

namespace {

// Loads the samples' tensors, checking each against the model before training starts.
engine::Result<std::vector<train::TrainingSample>> load_samples(const engine::NodeContext& ctx,
                                                                const TrainingSet& set,
                                                                const wan::WanConfig& config) {
  if (set.samples.empty()) return node_error(ctx, "The training set is empty; check Encode Dataset's dataset.");
  std::vector<train::TrainingSample> samples;
  for (const TrainingSampleFile& file : set.samples) {
    std::error_code ec;
    if (!fs::is_regular_file(file.path, ec)) {
      return node_error(ctx, "Training sample '" + file.path + "' (clip " + file.source + ") is gone; "
                             "run Encode Dataset again (change a param or clear the cache).");
    }
    if (file.latent_shape.at(0) != config.out_dim || file.context_shape.at(1) != config.text_dim) {
      return node_error(ctx, "Sample of clip " + file.source + " has latent channels " +
                             std::to_string(file.latent_shape[0]) + " and text width " +
                             std::to_string(file.context_shape[1]) + ", the model takes " +
                             std::to_string(config.out_dim) + " and " + std::to_string(config.text_dim) +
                             "; encode the dataset with this model's VAE and text encoder.");
    }
    TrainingSampleData data = read_training_sample(file.path);
    // The image conditioning goes to a model that takes it (Wan2.2-I2V-A14B) and to no other.
    const bool conditioned = config.condition_channels() > 0;
    samples.push_back({data.latent, data.context, file.image_to_video, conditioned ? data.condition : at::Tensor(),
                       file.source});
  }
  return samples;
}

engine::Result<train::TrainOptions> train_options(const engine::NodeContext& ctx, const DitHandle& dit,
                                                  const TrainingSet& set, const AttentionParamSchema& schema) {
  train::TrainOptions o;
  const NoiseLevels levels = noise_levels(ctx, dit, "Training");
  o.sigma_min = levels.sigma_min;
  o.sigma_max = levels.sigma_max;
  o.mode = ctx.param_string("mode") == "full" ? train::TrainMode::Full : train::TrainMode::Lora;
  o.lora.rank = static_cast<int>(ctx.param_int("lora_rank"));
  o.lora.alpha = ctx.param_float("lora_alpha");
  o.method = ctx.param_string("method");
  auto method_params = schema.params_for(o.method, ctx.params());
  if (!method_params.ok()) return node_error(ctx, method_params.error().message);
  o.method_params = std::move(*method_params);
  o.sparsity = {ctx.param_float("sparsity_start"), ctx.param_float("sparsity_target"),
                static_cast<int>(ctx.param_int("sparsity_schedule_steps"))};
  o.steps = static_cast<int>(ctx.param_int("steps"));
  o.batch = static_cast<int>(ctx.param_int("batch"));
  o.accumulation = static_cast<int>(ctx.param_int("accumulation"));
  o.warmup_steps = static_cast<int>(ctx.param_int("warmup"));
  o.lr_schedule = ctx.param_string("lr_schedule");
  o.lr = ctx.param_float("lr");
  o.weight_decay = ctx.param_float("weight_decay");
  o.grad_clip = ctx.param_float("grad_clip");
  o.seed = static_cast<uint64_t>(ctx.param_int("seed"));
  o.caption_dropout = ctx.param_float("caption_dropout");
  if (o.caption_dropout > 0) o.empty_context = set.dropout_context;
  o.checkpointing = ctx.param_bool("checkpointing");
  o.save_every = static_cast<int>(ctx.param_int("save_every"));
  o.checkpoint_dir = ctx.param_path("checkpoint_folder");
  o.resume_from = ctx.param_string("resume").empty() ? std::string() : ctx.param_path("resume");
  o.on_step = [&ctx](const train::TrainStep& s) {
    const std::string text = "loss " + format_number("%.6f", s.loss) + " lr " + format_number("%.3g", s.lr);
    ctx.progress(s.step, s.steps, text, {{"loss", s.loss}, {"lr", s.lr}});
  };
  o.is_cancelled = [&ctx] { return ctx.cancelled(); };
  return o;
}

engine::Result<engine::ValueMap> compute_train_wan(engine::NodeContext& ctx, const AttentionParamSchema& schema,
                                                   const AttentionSource& attention) {
  const DitHandle& dit = ctx.input_as<DitHandle>("model");
  const TrainingSet& set = ctx.input_as<TrainingSet>("training_set");
  plugin::AttentionBackend* backend = attention.backend;
  if (!backend) return node_error(ctx, "No attention plugin for training: " + attention.missing);
  auto samples = load_samples(ctx, set, dit.model->config());
  if (!samples.ok()) return samples.error();
  auto trained_options = train_options(ctx, dit, set, schema);
  if (!trained_options.ok()) return trained_options.error();
  train::TrainOptions& options = *trained_options;
  auto validation = TrainValidation::make(ctx, set);
  if (!validation.ok()) return validation.error();
  if (TrainValidation* v = validation->get(); v && samples->front().condition.defined()) {
    v->use_condition(samples->front().condition);
  }
  // Several ranks: each trains its share of the tokens; rank 0 alone writes files.
  const bool writes = !receives_from_rank0(ctx.options());
  if (const auto sp = node_ranks(ctx)) {
    options.sequence_parallel = sp.get();  // the runner keeps the process's group
    ctx.log_info("Training runs sequence-parallel over " + std::to_string(sp->world_size()) + " processes.");
  }
  std::error_code ec;
  if (writes) fs::create_directories(options.checkpoint_dir, ec);
  // A deep copy: the input MODEL is shared with other nodes and the cache.
  auto model = std::dynamic_pointer_cast<wan::WanModelImpl>(dit.model->clone());
  if (TrainValidation* v = validation->get()) {
    options.validate_every = static_cast<int>(ctx.param_int("validate_every"));
    options.on_validate = [&ctx, v, model, steps = options.steps](int step, const wan::AttentionChoice& attention) {
      v->run(ctx, step, steps, wan::WanModel(model), attention);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  train::TrainResult result;
  try {
    result = train::train(*model, backend, *samples, options);
  } catch (const c10::Error& e) {
    return node_error(ctx, std::string("Training failed: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Training failed: ") + e.what());
  }
  if (result.cancelled) {
    if (!result.checkpoint_path.empty()) ctx.wrote(result.checkpoint_path);
    const std::string where = result.checkpoint_path.empty()
                                  ? "no checkpoint was written (set checkpoint_folder)"
                                  : "resumable checkpoint '" + result.checkpoint_path + "' (set resume to it to continue)";
    ctx.log_warn("Training cancelled after step " + std::to_string(result.steps_done) + "; " + where + ".");
    return node_error(ctx, "Training cancelled after step " + std::to_string(result.steps_done) + "; " + where + ".");
  }
  auto written = writes ? write_weights(ctx, *model, options.mode) : engine::Result<std::string>(std::string());
  if (!written.ok()) return written.error();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double first = result.losses.empty() ? 0.0 : result.losses.front();
  const double last = result.losses.empty() ? 0.0 : result.losses.back();
  ctx.log_info("Trained " + std::to_string(result.steps_done) + " steps in " + format_number("%.1f", seconds) +
               " s (loss " + format_number("%.4f", first) + " -> " + format_number("%.4f", last) + "); wrote " +
               *written + ".");
  DitHandle trained{model, *written, dit.device, dit.dtype, dit.expert};
  const std::size_t bytes = module_bytes(*model);
  return engine::ValueMap{{"model", engine::make_value(kModelType, std::move(trained), bytes)},
                          {"path", engine::make_value(kPathType, *written)}};
}

// sparsity_start and sparsity_target with the rules of the plugin's sparsity ([0, 1) without one).
std::vector<ParamSpec> sparsity_schedule_specs(const plugin::ParamDescriptor* sparsity) {
  plugin::ParamDescriptor d;
  d.name = "sparsity";
  d.type = plugin::ParamType::Float;
  d.min = 0.0;
  d.max = 1.0;
  d.max_exclusive = true;
  d.default_value = 0.875;
  if (sparsity != nullptr && sparsity->type == plugin::ParamType::Float &&
      std::holds_alternative<double>(sparsity->default_value)) {
    d = *sparsity;
  }
  const nlohmann::json target = std::get<double>(d.default_value);
  return {spec_like(d, "sparsity_start", 0.0, "Methods with a sparsity (vsa, sla_star): the sparsity at step 1."),
          spec_like(d, "sparsity_target", target, "The sparsity reached at the end of the schedule.")};
}

}  // namespace

engine::NodeType train_wan_node(const AttentionSource& attention) {
  const std::vector<plugin::MethodInfo> methods = attention.methods();
  std::vector<std::string> attention_methods;
  for (const auto& m : methods) attention_methods.push_back(m.name);
  engine::NodeType t;
  t.name = "TrainWan";
  t.display_name = "Train Wan";
  t.category = "training";
  t.description = "Fine-tunes a copy of the Wan DiT on an encoded training set (flow matching, AdamW): "
                  "LoRA adapters (written with ComfyUI names) or every weight (a full checkpoint). "
                  "Loss and learning rate per step in the progress; cancel leaves a resumable "
                  "checkpoint. The input model is not changed; the trained copy is the model output.";
  t.inputs = {{"model", kModelType, false, "The DiT from Load Wan Model."},
              {"training_set", kTrainingSetType, false, "From Encode Dataset."},
              {"validation", kConditioningType, true, "A prompt from Encode Text for the validation clips."},
              {"vae", kVaeType, true, "Decodes the validation clips (without it their latent is previewed)."}};
  t.outputs = {{"model", kModelType, false, "The trained copy (LoRA attached), for Wan Sampler."},
               {"path", kPathType, false, "The written LoRA or checkpoint file."}};
  const plugin::MethodInfo* dense = plugin::find_method_of_kind(methods, plugin::MethodKind::Dense);
  const std::string default_method = dense ? dense->name : attention_methods.front();
  t.params = {
      ParamSpec::enumeration("mode", {"lora", "full"}, "lora", "lora: train adapters; full: every weight."),
      ParamSpec::enumeration("method", attention_methods, default_method, "Self-attention method while training."),
      ParamSpec::integer("steps", 100, 1, 1000000, "Optimizer steps."),
      ParamSpec::real("lr", 1e-4, 1e-9, 1.0, "Peak learning rate (must be positive)."),
      ParamSpec::integer("batch", 1, 1, 256, "Samples per micro-batch."),
      ParamSpec::integer("accumulation", 1, 1, 1024, "Micro-batches per optimizer step."),
      ParamSpec::integer("warmup", 0, 0, 1000000, "Linear warm-up steps."),
      ParamSpec::enumeration("lr_schedule", {"constant", "cosine"}, "constant", "Learning rate after warm-up."),
      ParamSpec::integer("lora_rank", 32, 1, 1024, "LoRA rank."),
      ParamSpec::real("lora_alpha", 32.0, 0.001, 100000.0, "LoRA alpha (scale = alpha / rank)."),
      ParamSpec::integer("sparsity_schedule_steps", 0, 0, 1000000, "Steps from start to target (0: target at once)."),
      ParamSpec::seed("seed", 0, "Noise, timesteps, sample order, caption dropout and LoRA init."),
      ParamSpec::real("caption_dropout", 0.0, 0.0, 0.95,
                      "Share of samples trained on Encode Dataset's dropout prompt instead of their "
                      "caption, so that guidance above 1 keeps working (0.1 is usual)."),
      ParamSpec::boolean("checkpointing", false, "Gradient checkpointing per block (less memory, slower)."),
      ParamSpec::integer("save_every", 0, 0, 1000000, "Resumable checkpoint every N steps (0: only on cancel)."),
      ParamSpec::folder_path("checkpoint_folder", "{output}/train-checkpoints", "Where resumable checkpoints go.")
          .written(),
      ParamSpec::file_path("resume", "", "Safetensors (*.safetensors)", "A checkpoint to continue from; empty = start fresh."),
      ParamSpec::file_path("output", "{output}/lora.safetensors", "Safetensors (*.safetensors)",
                           "The LoRA (mode lora) or full checkpoint (mode full) file.").written(),
      weights_dtype_param(),
      naming_param(),
      ParamSpec::real("weight_decay", 0.0, 0.0, 1.0, "AdamW weight decay."),
      ParamSpec::real("grad_clip", 1.0, 0.0, 1000.0, "Global gradient-norm clip (0: none)."),
  };
  const std::vector<ParamSpec> levels = noise_level_params();
  t.params.insert(std::find_if(t.params.begin(), t.params.end(), [](const ParamSpec& p) { return p.name == "weight_decay"; }),
                  levels.begin(), levels.end());
  const std::vector<ParamSpec> validation = validation_params();
  t.params.insert(t.params.end(), validation.begin(), validation.end());
  std::vector<std::string> taken;
  for (const auto& p : t.params) taken.push_back(p.name);
  auto schema = std::make_shared<const AttentionParamSchema>(attention.methods(), taken,
                                                             std::vector<std::string>{"sparsity"});
  // The method's params right after the method, then the sparsity schedule.
  auto after_method = std::find_if(t.params.begin(), t.params.end(),
                                   [](const ParamSpec& p) { return p.name == "method"; }) + 1;
  after_method = t.params.insert(after_method, schema->specs().begin(), schema->specs().end()) +
                 static_cast<std::ptrdiff_t>(schema->specs().size());
  const std::vector<ParamSpec> schedule = sparsity_schedule_specs(schema->descriptor("sparsity"));
  t.params.insert(after_method, schedule.begin(), schedule.end());
  for (const char* advanced : {"sparsity_start", "sparsity_schedule_steps", "checkpointing", "weight_decay", "grad_clip"}) {
    for (ParamSpec& p : t.params) {
      if (p.name == advanced) p.advanced = true;
    }
  }
  const engine::FingerprintFn output = output_fingerprint("output");
  t.fingerprint = [output](const nlohmann::json& params, const engine::RunOptions& options) {
    const bool resumes = !params.value("resume", std::string()).empty();
    return output(params, options) + "|" + (resumes ? file_param_fingerprint(params, options, "resume") : "");
  };
  t.preflight = writer_preflight("output", weights_kind);
  t.every_rank = true;  // several ranks: training runs sequence-parallel over all of them
  t.compute = [schema, attention](engine::NodeContext& ctx) { return compute_train_wan(ctx, *schema, attention); };
  return t;
}

}  // namespace vidgraph::nodes
