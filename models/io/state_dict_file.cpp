#include "state_dict_file.h"

#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <c10/core/GradMode.h>

#include "file_kind.h"
#include "pth_reader.h"
#include "tensor_file.h"

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
  if (detect_weight_format(path) == WeightFormat::Pth) return pth_load_state_dict(path, device, dtype);
  // The shared header: a checkpoint manifest that read this file's header already lends it.
  return TensorFile::open_shared(path)->load_all(device, dtype);
}

const at::Tensor* find_tensor(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) {
      return &tensor;
    }
  }
  return nullptr;
}

void load_strict(const torch::OrderedDict<std::string, at::Tensor>& params, const NamedTensors& tensors,
                 const std::string& what, const std::string& origin) {
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [k, t] : tensors) by_name[k] = &t;
  std::vector<std::pair<at::Tensor, const at::Tensor*>> assign;
  std::vector<std::string> missing;
  for (const auto& item : params) {
    const auto it = by_name.find(item.key());
    if (it == by_name.end()) {
      missing.push_back(item.key());
      continue;
    }
    if (it->second->sizes() != item.value().sizes()) {
      throw std::runtime_error("'" + origin + "': " + what + " tensor '" + item.key() + "' has shape " +
                               shape_string(*it->second) + ", expected " + shape_string(item.value()));
    }
    assign.emplace_back(item.value(), it->second);
    by_name.erase(it);
  }
  if (!missing.empty()) {
    throw std::runtime_error("'" + origin + "' lacks " + std::to_string(missing.size()) + " " + what +
                             " tensor(s), first '" + missing.front() + "'");
  }
  if (!by_name.empty()) {
    throw std::runtime_error("'" + origin + "' has " + std::to_string(by_name.size()) + " tensor(s) the " + what +
                             " model does not use, first '" + by_name.begin()->first + "'");
  }
  c10::NoGradGuard no_grad;
  for (auto& [param, src] : assign) param.set_data(src->contiguous());  // adopts the given dtype and device
}

std::string shape_string(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace vidgraph::model_io
