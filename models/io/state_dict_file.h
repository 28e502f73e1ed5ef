// One entry point for a weight file whatever its format: a PyTorch zip `.pth` state dict (read by
// pth_reader.h), a `.safetensors` file (safetensors.h) or a `.gguf` file (gguf.h, dequantised).
// The format is told by the file's first bytes, not its name. Errors are std::runtime_error (SafetensorsError for safetensors) naming the file.
#pragma once

#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <torch/ordered_dict.h>

#include "safetensors.h"

namespace vidgraph::model_io {

enum class WeightFormat { Pth, Safetensors, Gguf };

// Throws when the file cannot be opened or is neither format.
WeightFormat detect_weight_format(const std::string& path);

// Every tensor of the file on `device`, converted to `dtype` when given, in the file's order; fp8
// safetensors weights are dequantised and their scales and markers dropped (scaled_fp8.h); GGUF
// tensors are decoded (gguf.h: quantised ones to fp32 unless `dtype` is given).
NamedTensors load_state_dict_file(const std::string& path, c10::Device device = c10::Device(c10::kCPU),
                                  std::optional<at::ScalarType> dtype = std::nullopt);

// The tensor named `name`, or nullptr (a linear scan: state dicts are read once per load).
const at::Tensor* find_tensor(const NamedTensors& tensors, const std::string& name);

// The strict load of a module's state: every parameter of `params` (a module's named_parameters)
// takes the tensor of its name in `tensors` (its dtype and device as given). Throws, naming `what`
// ("VAE") and `origin` (the file), when one is missing, has another shape, or a tensor is left
// over; checks everything before changing any parameter.
void load_strict(const torch::OrderedDict<std::string, at::Tensor>& params, const NamedTensors& tensors,
                 const std::string& what, const std::string& origin);

// "[3, 4, 5]": a tensor's shape as error messages print it.
std::string shape_string(const at::Tensor& t);

} // namespace vidgraph::model_io
