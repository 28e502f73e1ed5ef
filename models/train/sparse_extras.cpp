#include "models/train/sparse_extras.h"

#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include "models/wan/wan_attention.h"
#include "models/wan/wan_block.h"

namespace vidgraph::train {

namespace {

wan::WanLinear zero_linear(int64_t in, int64_t out, const at::TensorOptions& options) {
  wan::WanLinearOptions o(in, out);
  o.tensor_options = options;
  wan::WanLinear linear(o);
  c10::NoGradGuard no_grad;
  linear->weight.zero_();
  linear->bias.zero_();
  return linear;
}

}  // namespace

void add_sparse_extras(wan::WanModelImpl& model, bool gate_compress, bool proj_l) {
  const wan::WanConfig& c = model.config();
  const auto compute = at::TensorOptions().device(model.device()).dtype(model.compute_dtype());
  const auto fp32 = at::TensorOptions().device(model.device()).dtype(at::kFloat);
  for (const auto& module : *model.blocks) {
    auto* block = module->as<wan::WanAttentionBlockImpl>();
    wan::WanSelfAttentionImpl& attn = *block->self_attn;
    if (gate_compress && attn.to_gate_compress.is_empty()) {
      attn.to_gate_compress = attn.register_module("to_gate_compress", zero_linear(c.dim, c.dim, compute));
      attn.options.with_gate_compress = true;
      block->options.config.with_gate_compress = true;
    }
    if (proj_l && attn.proj_l.is_empty()) {
      attn.proj_l = attn.register_module("proj_l", zero_linear(c.head_dim(), c.head_dim(), fp32));
      attn.options.with_proj_l = true;
      block->options.config.with_proj_l = true;
    }
  }
  model.options.config.with_gate_compress = c.with_gate_compress || gate_compress;
  model.options.config.with_proj_l = c.with_proj_l || proj_l;
}

SparseExtrasNeeded sparse_extras_for(const plugin::MethodInfo& method) {
  SparseExtrasNeeded n;
  n.gate_compress = method.uses_gate;
  n.proj_l = method.uses_proj_l;
  return n;
}

std::vector<std::pair<std::string, at::Tensor>> sparse_extra_parameters(wan::WanModelImpl& model,
                                                                        const SparseExtrasNeeded& need) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, param] : wan::wan_named_parameters(model)) {
    const bool gate = name.find(".to_gate_compress.") != std::string::npos;
    const bool pl = name.find(".proj_l.") != std::string::npos;
    if ((gate && need.gate_compress) || (pl && need.proj_l)) {
      out.emplace_back(name, param);
    }
  }
  return out;
}

}  // namespace vidgraph::train
