// One entry point for a weight file whatever its format: a PyTorch zip `.pth` state dict (read by
// pth_reader.h) or a `.safetensors` file (safetensors.h). The format is told by the file's first
// bytes, not its name. Errors are std::runtime_error (SafetensorsError for safetensors) naming the file.
#pragma once

#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "safetensors.h"

namespace vidgraph::model_io {

enum class WeightFormat { Pth, Safetensors };

// Throws when the file cannot be opened or is neither format.
WeightFormat detect_weight_format(const std::string& path);

// Every tensor of the file on `device`, converted to `dtype` when given, in the file's order.
NamedTensors load_state_dict_file(const std::string& path, c10::Device device = c10::Device(c10::kCPU),
                                  std::optional<at::ScalarType> dtype = std::nullopt);

} // namespace vidgraph::model_io
