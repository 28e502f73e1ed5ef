// Implements the helpers of model_handles.h.
#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

std::string shape_text(const at::Tensor& tensor) {
  if (!tensor.defined()) return "(undefined)";
  std::string out = "[";
  for (int64_t i = 0; i < tensor.dim(); ++i) {
    if (i) out += ", ";
    out += std::to_string(tensor.size(i));
  }
  return out + "]";
}

std::size_t module_bytes(const torch::nn::Module& module) {
  std::size_t bytes = 0;
  for (const auto& p : module.parameters()) bytes += p.numel() * p.element_size();
  for (const auto& b : module.buffers()) bytes += b.numel() * b.element_size();
  return bytes;
}

}  // namespace vidgraph::nodes
