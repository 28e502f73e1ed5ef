// The attention plugin's backend: method table (full, vsa, sla_star and their params), prepare
// (attention_prepare.h), dispatch to the method implementations after the door checks, and shutdown
// (device paths drained, layout cache freed), and the GPU build's fused DiT kernels.
// create_attention_plugin_backend() is what the entry symbol's factory returns.
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/attention/attention_prepare.h"

#include <memory>

namespace vidgraph::attention {

// The methods and parameters: full (none); vsa: sparsity (float in [0, 1), default 0.875), tile
// (3 ints in [1, 64], default 4,4,4), uses the gate; sla_star: those plus feature_map (softmax | elu |
// relu), uses the gate and proj_l.
std::vector<plugin::MethodInfo> attention_methods();

class AttentionPluginBackend : public plugin::AttentionBackend {
 public:
  AttentionPluginBackend();  // registers the CPU path (and the GPU path when built with it)
  ~AttentionPluginBackend() override;

  std::vector<plugin::MethodInfo> methods() const override;
  plugin::PrepareResult prepare(const plugin::PrepareRequest& request) override;
  at::Tensor forward(const plugin::AttentionCall& call) override;
  plugin::AttentionResult forward_with_stats(const plugin::AttentionCall& call) override;
  plugin::DitKernels* dit_kernels() override { return shut_down_ ? nullptr : dit_kernels_.get(); }
  plugin::VaeKernels* vae_kernels() override { return shut_down_ ? nullptr : vae_kernels_.get(); }
  void shutdown() override;

 private:
  plugin::AttentionResult run(const plugin::AttentionCall& call, bool want_stats);
  // The call's preparation; a call without one is an error (prepare() is the only door).
  std::shared_ptr<const PreparedState> state_for(const plugin::AttentionCall& call) const;

  std::vector<plugin::MethodInfo> methods_;
  std::unique_ptr<plugin::DitKernels> dit_kernels_;  // GPU builds only
  std::unique_ptr<plugin::VaeKernels> vae_kernels_;  // GPU builds only
  bool shut_down_ = false;
};

}  // namespace vidgraph::attention
