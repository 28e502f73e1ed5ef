// Random weights for timing, made on the device: vidgraph-model-bench never loads a checkpoint.
//
// The model layer's seeded initialisers (wan_init_weights, make_seeded_vae) draw every value from a
// CPU generator, which takes minutes for the 5B DiT. These fill each parameter in place, on its own
// device, with the device's default generator (not reproducible across devices: the point is
// timing, and the values only need a sensible scale so that nothing overflows):
//   names ending "modulation"          N(0, 0.05^2)   (small modulation tables)
//   names ending "bias"                N(0, 0.02^2)
//   names ending "gamma", other 1-D    N(1, 0.1^2)    (norm weights)
//   every other parameter              N(0, 1/fan_in) with fan_in = numel / size(0) (matmuls, convs)
#pragma once

#include <cstdint>

#include <c10/core/TensorOptions.h>
#include <torch/nn/module.h>

namespace vidgraph::bench {

// Gives every parameter of `module` fresh, uninitialised storage with `options` (device and dtype)
// without reading the old values: for modules built on the CPU with at::empty weights (the VAE),
// so moving them costs neither host memory traffic nor a copy.
void relocate_parameters(torch::nn::Module& module, const at::TensorOptions& options);

// Fills every parameter in place by the rules above (no autograd).
void fill_random_parameters(torch::nn::Module& module);

// Sum of numel * element size over the parameters.
int64_t parameter_bytes(const torch::nn::Module& module);

}  // namespace vidgraph::bench
