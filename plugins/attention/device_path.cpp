// The device-path registry. See device_path.h.
#include "plugins/attention/device_path.h"

#include "plugins/attention/tile_selection.h"

#include <c10/util/Exception.h>

#include <map>
#include <mutex>

namespace vidgraph::attention {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<c10::DeviceType, std::unique_ptr<DevicePath>>& registry() {
  static std::map<c10::DeviceType, std::unique_ptr<DevicePath>> r;
  return r;
}

}  // namespace

TopkSelection DevicePath::select_topk(const at::Tensor& scores, int64_t topk) {
  return select_topk_aten(scores, topk);
}

void register_device_path(c10::DeviceType device, std::unique_ptr<DevicePath> path) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[device] = std::move(path);
}

DevicePath* find_device_path(c10::DeviceType device) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const auto it = registry().find(device);
  return it == registry().end() ? nullptr : it->second.get();
}

DevicePath& require_device_path(c10::DeviceType device, const std::string& method) {
  DevicePath* path = find_device_path(device);
  TORCH_CHECK(path != nullptr, "method ", method, " is not available on device ",
              c10::DeviceTypeName(device, /*lower_case=*/true),
              ": this build of the attention plugin has no path for it (build with the GPU kernels, or "
              "move the tensors to the CPU yourself)");
  return *path;
}

void shutdown_device_paths() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (auto& [type, path] : registry()) path->shutdown();
  registry().clear();
}

}  // namespace vidgraph::attention
