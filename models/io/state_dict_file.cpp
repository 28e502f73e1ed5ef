#include "state_dict_file.h"

#include <sstream>
#include <stdexcept>

#include "file_kind.h"
#include "gguf.h"
#include "pth_reader.h"
#include "scaled_fp8.h"

namespace vidgraph::model_io {

WeightFormat detect_weight_format(const std::string& path) {
  const FileKind kind = sniff_file_kind(read_file_head(path));
  if (kind == FileKind::Zip) {
    return WeightFormat::Pth;  // PthReader::open says so when the zip is not a PyTorch checkpoint
  }
  if (kind == FileKind::Safetensors) {
    return WeightFormat::Safetensors;
  }
  if (kind == FileKind::Gguf) {
    return WeightFormat::Gguf;
  }
  throw std::runtime_error("'" + path + "' is " + file_kind_sentence(kind) +
                           "; expected a PyTorch zip .pth state dict, a .safetensors or a .gguf file");
}

NamedTensors load_state_dict_file(const std::string& path, c10::Device device, std::optional<at::ScalarType> dtype) {
  switch (detect_weight_format(path)) {
    case WeightFormat::Pth:
      return pth_load_state_dict(path, device, dtype);
    case WeightFormat::Gguf:
      return load_gguf_tensors(GgufFile::open(path), device, dtype);
    case WeightFormat::Safetensors:
      break;
  }
  return load_safetensors_weights(SafetensorsFile::open(path), device, dtype);
}

const at::Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) {
      return &tensor;
    }
  }
  return nullptr;
}

std::string shape_string(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace vidgraph::model_io
