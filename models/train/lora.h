// LoRA adapters on the Wan DiT's linear layers, attached in place (no copy of the base weights):
// each targeted WanLinear gets down [r, in] and up [out, r] fp32 tensors on the model's device and
// computes y = W x + b + scale * up (down x), scale = strength * alpha / rank (wan_layers.h).
//
// Targets are module-name patterns matched against each linear's name with its `blocks.N.` prefix
// removed, or against the full name: "self_attn.q", "cross_attn.*", "ffn.0", "blocks.3.self_attn.o".
// `*` matches any run of characters other than '.'. The sparse extras (to_gate_compress, proj_l)
// are never LoRA targets: the trainer trains them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/wan/wan_layers.h"
#include "models/wan/wan_model.h"

namespace vidgraph::train {

struct LoraOptions {
  int rank = 32;
  double alpha = 32;
  std::vector<std::string> targets;  // empty = self_attn q, k, v, o
};

// self_attn.q, self_attn.k, self_attn.v, self_attn.o
std::vector<std::string> lora_default_targets();

// Whether `name` (a module name such as blocks.0.self_attn.q) is selected by `pattern`.
bool lora_pattern_matches(const std::string& pattern, const std::string& name);

// Every WanLinear of the model with its module name, in module order.
std::vector<std::pair<std::string, wan::WanLinearImpl*>> wan_named_linears(const wan::WanModelImpl& model);

struct LoraModule {
  std::string name;  // module name, e.g. blocks.0.self_attn.q
  wan::WanLinearImpl* linear = nullptr;
};

// The linears `options.targets` selects. Throws std::invalid_argument for a pattern that matches
// no linear layer.
std::vector<LoraModule> lora_target_modules(const wan::WanModelImpl& model, const LoraOptions& options);

// Attaches a fresh adapter to every target: up = 0, down Kaiming-uniform (bound 1/sqrt(in)) from a
// CPU generator seeded by `seed` and the module name; scale = strength * alpha / rank. Replaces an
// adapter already there. Throws std::invalid_argument for rank <= 0, alpha <= 0 or a bad target.
std::vector<LoraModule> attach_lora(wan::WanModelImpl& model, const LoraOptions& options, uint64_t seed = 0,
                                    double strength = 1.0);

// Removes every adapter (the model computes its base weights again).
void detach_lora(wan::WanModelImpl& model);

// The linears that carry an adapter now.
std::vector<LoraModule> attached_lora_modules(const wan::WanModelImpl& model);

}  // namespace vidgraph::train
