// The attention plugin's backend. See attention_plugin.h.
#include "plugins/attention/attention_plugin.h"

#include "plugins/attention/attention_checks.h"
#include "plugins/attention/attention_log.h"
#include "plugins/attention/attention_methods.h"
#include "plugins/attention/cpu_path.h"
#include "plugins/attention/tile_layout.h"

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

int64_t tile_volume_of(const plugin::ParamMap& params) {
  const auto it = params.find("tile");
  if (it == params.end()) return 64;
  const auto t = plugin::param_as_int_list(params, "tile");
  return t.at(0) * t.at(1) * t.at(2);
}

}  // namespace

std::vector<plugin::MethodInfo> attention_methods() {
  return {
      {"full", "dense softmax attention (scale 1/sqrt(D))", {}},
      {"vsa", "video sparse attention: coarse tile attention + top-k block-sparse fine attention, gated",
       {sparsity_param(), tile_param()}},
      {"sla_star", "VSA plus a linear-attention branch over all tokens through proj_l",
       {sparsity_param(), tile_param(), feature_map_param()}},
  };
}

AttentionPluginBackend::AttentionPluginBackend() : methods_(attention_methods()) {
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

at::Tensor AttentionPluginBackend::forward(const plugin::AttentionCall& call) {
  return forward_with_stats(call).out;
}

plugin::AttentionResult AttentionPluginBackend::forward_with_stats(const plugin::AttentionCall& call) {
  TORCH_CHECK(!shut_down_, "the attention plugin was shut down; load it again");
  const plugin::MethodInfo* method = plugin::find_method(methods_, call.method);
  if (method == nullptr)
    throw std::invalid_argument("unknown attention method '" + call.method + "' (full, vsa, sla_star)");
  const plugin::ParamMap params = plugin::resolve_params(*method, call.params);
  TORCH_CHECK(call.q.defined(), "method ", call.method, ": q must be given");
  DevicePath& path = require_device_path(call.q.device().type(), call.method);
  check_attention_call(call, path, call.method == "full" ? 64 : tile_volume_of(params));
  SPDLOG_LOGGER_DEBUG(attention_logger(), "{} on {} ({}): q {}", call.method, path.name(),
                      c10::toString(call.q.scalar_type()), c10::str(call.q.sizes()));
  if (call.method == "full") return run_full(call);
  if (call.method == "vsa") return run_vsa(call, params);
  return run_sla_star(call, params);
}

bool AttentionPluginBackend::supports(const std::string& method, const std::string& device_type) const {
  if (plugin::find_method(methods_, method) == nullptr) return false;
  try {
    return find_device_path(c10::Device(device_type).type()) != nullptr;
  } catch (const c10::Error&) {
    return false;
  }
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
