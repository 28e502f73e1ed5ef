// The device-path registry and the default (shared ATen) staging hooks. See device_path.h.
#include "plugins/attention/device_path.h"

#include "plugins/attention/attention_methods.h"
#include "plugins/attention/tile_layout.h"
#include "plugins/attention/tile_selection.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/matmul.h>
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

TiledTokens DevicePath::tile(const at::Tensor& x, const TileLayout& layout, bool with_mean) {
  TiledTokens t{tile_tokens(x, layout), {}};
  if (!with_mean) return t;
  // [B, H, Sp, D] -> [B, H, N, V, D] -> sum over V in the accumulation dtype -> / real count
  const at::ScalarType acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor& tiled = t.tiled;
  const at::Tensor sums =
      tiled.to(acc).view({tiled.size(0), tiled.size(1), layout.num_tiles, layout.tile_volume, tiled.size(3)}).sum(3);
  t.mean = sums / layout.tile_sizes.to(acc).unsqueeze(-1);
  return t;
}

at::Tensor DevicePath::untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                              const at::Tensor& gate) {
  // [B, H, Sp, D] -> [B, S, H, D]
  at::Tensor out = untile_tokens(fine, layout);
  if (!gate.defined()) return out;
  // Coarse output per tile, broadcast to its tokens: [B, H, N, D] -> [B, H, S, D] -> [B, S, H, D]
  const at::Tensor broadcast = coarse.index_select(2, layout.tile_of_token).permute({0, 2, 1, 3});
  return out + (broadcast * gate).to(out.scalar_type());
}

at::Tensor DevicePath::add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const std::string& feature_map, const at::Tensor& weight,
                                         const at::Tensor& bias) {
  const at::Tensor o_lin = linear_branch(q, k, v, feature_map);             // [B, S, H, D]
  at::Tensor proj = at::matmul(o_lin, weight.to(o_lin.scalar_type()).t());  // [B, S, H, D]
  if (bias.defined()) proj = proj + bias.to(proj.scalar_type());
  return out + proj.to(out.scalar_type());
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
