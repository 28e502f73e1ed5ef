// Internal: Train Wan's validation clips. Every `validate_every` steps and after the last, the model
// as trained so far samples a clip from the `validation` prompt: the size of the training set's
// first sample, `validation_steps` UniPC steps from seed `validation_seed`, no guidance (one model
// call a step), text-to-video, with the attention method and the sparsity that step trained with.
// With a VAE connected the clip is decoded, posted as the node's preview (the editor's preview panel
// plays it; vidgraph-run --previews saves its first frame) and, in builds with media, written to
// `validation_folder` as step_000040.mp4 (an existing file is never replaced: the name gets a
// number). Without a VAE the middle frame's latent projection is posted (sampler_preview.h).
// Sampling draws its own seeded noise: a run with validation trains exactly as one without. In a
// run of several ranks every rank samples (sequence-parallel) and rank 0 decodes, posts and writes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "engine/result.h"
#include "models/wan/wan_model.h"
#include "nodes/training/training_set.h"

namespace vidgraph::nodes {

// Train Wan's validation params (validate_every, validation_steps, validation_seed,
// validation_folder).
std::vector<engine::ParamSpec> validation_params();

class TrainValidation {
 public:
  // Null when validate_every is 0; an error naming what to connect when it is set without a
  // validation prompt.
  static engine::Result<std::unique_ptr<TrainValidation>> make(const engine::NodeContext& ctx, const TrainingSet& set);
  // The same for clips of latent shape [C, F, H, W] (Distill Wan: the student's sample size).
  static engine::Result<std::unique_ptr<TrainValidation>> make(const engine::NodeContext& ctx,
                                                              std::vector<int64_t> latent_shape);

  // Samples with Wan Sampler's dmd scheduler at these timesteps (a distilled student's few steps)
  // instead of validation_steps UniPC steps.
  void use_dmd(std::vector<double> timesteps) { dmd_timesteps_ = std::move(timesteps); }
  // Wan2.2-I2V-A14B: the image conditioning the clips are sampled with (a training sample's).
  void use_condition(at::Tensor condition) { condition_ = std::move(condition); }

  // Samples, decodes, posts and writes the clip of `step` of `steps` with `model` and the attention
  // the step trained with, prepared for the validation latent.
  // Throws what sampling or decoding throws (the node reports it as the training's failure).
  void run(const engine::NodeContext& ctx, int step, int steps, wan::WanModel model,
           const wan::AttentionChoice& attention);

  // The files written so far.
  const std::vector<std::string>& written() const { return written_; }

 private:
  std::vector<int64_t> latent_shape_;  // [C, F, H, W]
  at::Tensor condition_;               // [4 + C, F, H, W], or undefined
  int sampling_steps_ = 8;
  std::vector<double> dmd_timesteps_;  // empty: UniPC
  uint64_t seed_ = 0;
  std::string folder_;
  std::vector<std::string> written_;
};

}  // namespace vidgraph::nodes
