#include "state_dict_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pth_reader.h"

namespace vidgraph::model_io {

WeightFormat detect_weight_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open the weight file '" + path + "'");
  }
  char head[9] = {};
  in.read(head, 9);
  if (in.gcount() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) {
    return WeightFormat::Pth;
  }
  if (in.gcount() == 9 && head[8] == '{') {
    return WeightFormat::Safetensors;
  }
  throw std::runtime_error("'" + path + "' is neither a PyTorch zip .pth state dict nor a .safetensors file");
}

NamedTensors load_state_dict_file(const std::string& path, c10::Device device, std::optional<at::ScalarType> dtype) {
  if (detect_weight_format(path) == WeightFormat::Pth) {
    return pth_load_state_dict(path, device, dtype);
  }
  const SafetensorsFile file = SafetensorsFile::open(path);
  NamedTensors out;
  for (const std::string& name : file.names()) {
    out.emplace_back(name, file.load(name, device, dtype));
  }
  return out;
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
