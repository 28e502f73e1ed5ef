// Tiny models, procedural samples and helpers shared by the training tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/train/trainer.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_model.h"

namespace train_test {

// wan_tiny_config with 4 latent channels, text_dim 16, text_len 8 (2 blocks, dim 64, 2 heads).
vidgraph::wan::WanConfig small_config();

at::Tensor randn_seeded(at::IntArrayRef shape, uint64_t seed, at::ScalarType dtype = at::kFloat);

// A smooth procedural latent [4, F, 8, 8] (sines of the coordinates, one phase per sample) and a
// random context [3, 16].
vidgraph::train::TrainingSample make_sample(int index, int64_t frames = 4, bool image_to_video = false);
std::vector<vidgraph::train::TrainingSample> make_samples(int count, int64_t frames = 4);

// Method params that give the 4x4x4-token grid of these samples 8 tiles (VSA selection matters).
vidgraph::plugin::ParamMap small_tiles();

double rel_err(const at::Tensor& a, const at::Tensor& b);

std::string temp_dir(const std::string& name);

}  // namespace train_test
