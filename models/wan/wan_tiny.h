// Deterministic weights and the tiny demo DiT: used by the tests and by the nodes' demo-model
// generator. Weights come from a CPU generator seeded per parameter, so a seed gives the same
// model on any device.
#pragma once

#include <cstdint>
#include <string>

#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_model.h"

namespace vidgraph::wan {

// 2 blocks, dim 64, 2 heads (head_dim 32), ffn 128, 48 latent channels, patch (1,2,2),
// text_dim 64, text_len 32, freq_dim 32.
WanConfig wan_tiny_config();

// Fills every parameter: Linear weights N(0, 1/in), biases N(0, 0.02^2), norm weights 1 + N(0, 0.1^2),
// modulation tables N(0, 0.1^2) (fp32 draw, then cast to each parameter's dtype and device).
// Sparse extras get the same random init (tests zero them when they need to).
void wan_init_weights(WanModelImpl& model, uint64_t seed);

// A model of `config` on the CPU in fp32 with wan_init_weights(seed).
WanModel wan_make_model(const WanConfig& config, uint64_t seed);

// Builds wan_make_model(config, seed) and writes it with wan_save_checkpoint.
void wan_save_tiny(const std::string& path, const WanConfig& config, uint64_t seed,
                   const WanSaveOptions& options);

} // namespace vidgraph::wan
