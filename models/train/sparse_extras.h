// The sparse-attention extras of each self-attention: to_gate_compress (VSA's coarse-branch gate,
// Linear(dim, dim) in the compute dtype) and proj_l (SLA*'s linear-branch projection,
// Linear(head_dim, head_dim) fp32). A checkpoint without them behaves as if they were zero; to
// train them, a loaded model gets zero-initialised ones here.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/wan/wan_model.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::train {

// Adds zero-initialised extras to every block that lacks them (existing ones are kept) and records
// them in the model's config, so checkpoints written afterwards carry them.
void add_sparse_extras(wan::WanModelImpl& model, bool gate_compress, bool proj_l);

// The extras a method trains: the ones it reads (MethodInfo::uses_gate -> to_gate_compress,
// uses_proj_l -> proj_l; vsa reads the gate, sla_star both).
struct SparseExtrasNeeded {
  bool gate_compress = false;
  bool proj_l = false;
};
SparseExtrasNeeded sparse_extras_for(const plugin::MethodInfo& method);

// Parameters of the extras `need` names, with canonical names, in module order.
std::vector<std::pair<std::string, at::Tensor>> sparse_extra_parameters(wan::WanModelImpl& model,
                                                                        const SparseExtrasNeeded& need);

}  // namespace vidgraph::train
