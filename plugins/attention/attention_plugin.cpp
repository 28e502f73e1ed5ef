// The attention plugin's backend. See attention_plugin.h.
#include "plugins/attention/attention_plugin.h"

#include "plugins/attention/attention_checks.h"
#include "plugins/attention/attention_log.h"
#include "plugins/attention/attention_methods.h"
#include "plugins/attention/cpu_path.h"
#include "plugins/attention/tile_layout.h"
#ifdef VIDGRAPH_ATTENTION_GPU
#include "plugins/attention/gpu/gpu_dit_kernels.h"
#include "plugins/attention/gpu/gpu_vae_kernels.h"
#endif

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <stdexcept>

namespace vidgraph::attention {
namespace {

// Live backends of this module: the device paths and caches are process-wide (per loaded module),
// so they are set up by the first backend and torn down by the last one's shutdown.
std::mutex g_instances_mutex;
int g_instances = 0;

plugin::ParamDescriptor sparsity_param() {
  plugin::ParamDescriptor d;
  d.name = "sparsity";
  d.type = plugin::ParamType::Float;
  d.default_value = 0.875;
  d.min = 0.0;
  d.max = 1.0;
  d.max_exclusive = true;
  d.description = "fraction of KV tiles skipped per query tile; topk = max(1, ceil((1 - sparsity) N))";
  return d;
}

plugin::ParamDescriptor tile_param() {
  plugin::ParamDescriptor d;
  d.name = "tile";
  d.type = plugin::ParamType::IntList;
  d.default_value = std::vector<int64_t>{4, 4, 4};
  d.min = 1;
  d.max = 64;
  d.list_size = 3;
  d.description = "tile shape (T, H, W) in tokens; GPU kernels need a volume of 64";
  return d;
}

plugin::ParamDescriptor feature_map_param() {
  plugin::ParamDescriptor d;
  d.name = "feature_map";
  d.type = plugin::ParamType::String;
  d.default_value = std::string("softmax");
  d.choices = {"softmax", "elu", "relu"};
  d.description = "feature map phi of the linear branch (softmax over head dim, elu+1, relu)";
  return d;
}

}  // namespace

std::vector<plugin::MethodInfo> attention_methods() {
  plugin::MethodInfo full{"full", "dense softmax attention (scale 1/sqrt(D))", {}};
  plugin::MethodInfo vsa{"vsa", "video sparse attention: coarse tile attention + top-k block-sparse fine attention, gated",
                         {sparsity_param(), tile_param()}};
  vsa.kind = plugin::MethodKind::Sparse;
  vsa.uses_gate = true;
  plugin::MethodInfo sla_star{"sla_star", "VSA plus a linear-attention branch over all tokens through proj_l",
                              {sparsity_param(), tile_param(), feature_map_param()}};
  sla_star.kind = plugin::MethodKind::SparseLinear;
  sla_star.uses_gate = sla_star.uses_proj_l = true;
  return {full, vsa, sla_star};
}

AttentionPluginBackend::AttentionPluginBackend() : methods_(attention_methods()) {
#ifdef VIDGRAPH_ATTENTION_GPU
  dit_kernels_ = std::make_unique<GpuDitKernels>();
  vae_kernels_ = std::make_unique<GpuVaeKernels>();
#endif  // VIDGRAPH_ATTENTION_GPU
  std::lock_guard<std::mutex> lock(g_instances_mutex);
  if (g_instances++ == 0) {
    register_device_path(c10::DeviceType::CPU, std::make_unique<CpuPath>());
#ifdef VIDGRAPH_ATTENTION_GPU
    register_gpu_device_paths();
#endif  // VIDGRAPH_ATTENTION_GPU
  }
}

AttentionPluginBackend::~AttentionPluginBackend() {
  if (!shut_down_) shutdown();
}

std::vector<plugin::MethodInfo> AttentionPluginBackend::methods() const { return methods_; }

plugin::PrepareResult AttentionPluginBackend::prepare(const plugin::PrepareRequest& request) {
  plugin::PrepareResult result;
  if (shut_down_) {
    result.error = "the attention plugin was shut down; load it again";
    return result;
  }
  std::shared_ptr<const PreparedState> state = prepare_state(methods_, request, &result.error);
  if (!state) return result;
  const plugin::MethodInfo* method = plugin::find_method(methods_, request.method);
  auto prepared = std::make_shared<plugin::PreparedAttention>();
  prepared->request = request;
  prepared->request.params = state->params;
  prepared->kind = method->kind;
  prepared->uses_gate = method->uses_gate;
  prepared->uses_proj_l = method->uses_proj_l;
  prepared->state = state;
  result.prepared = std::move(prepared);
  return result;
}

at::Tensor AttentionPluginBackend::forward(const plugin::AttentionCall& call) { return run(call, false).out; }

plugin::AttentionResult AttentionPluginBackend::forward_with_stats(const plugin::AttentionCall& call) {
  return run(call, true);
}

std::shared_ptr<const PreparedState> AttentionPluginBackend::state_for(const plugin::AttentionCall& call) const {
  TORCH_CHECK(call.prepared != nullptr,
              "an attention call needs a preparation: call prepare() for its method, params, device, dtype, "
              "head dim and grid, and pass the result with every call");
  TORCH_CHECK(call.prepared->state != nullptr, "method ", call.prepared->request.method,
              ": the preparation was not made by this plugin's prepare()");
  return std::static_pointer_cast<const PreparedState>(call.prepared->state);
}

plugin::AttentionResult AttentionPluginBackend::run(const plugin::AttentionCall& call, bool want_stats) {
  TORCH_CHECK(!shut_down_, "the attention plugin was shut down; load it again");
  const std::shared_ptr<const PreparedState> state = state_for(call);
  check_attention_call(call, *state);
  SPDLOG_LOGGER_DEBUG(attention_logger(), "{} ({}): q {}", state->method, c10::toString(call.q.scalar_type()),
                      c10::str(call.q.sizes()));
  switch (state->kind) {
    case plugin::MethodKind::Dense: return run_full(call, *state, want_stats);
    case plugin::MethodKind::Sparse: return run_vsa(call, *state, want_stats);
    case plugin::MethodKind::SparseLinear: return run_sla_star(call, *state, want_stats);
  }
  return run_full(call, *state, want_stats);
}

void AttentionPluginBackend::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  std::lock_guard<std::mutex> lock(g_instances_mutex);
  if (--g_instances == 0) {
    shutdown_device_paths();
    clear_tile_layout_cache();
    attention_logger()->debug("attention plugin shut down: device paths drained, caches freed");
  }
}

}  // namespace vidgraph::attention
