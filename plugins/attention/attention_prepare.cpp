// Preparation of a method for calls of one shape. See attention_prepare.h.
#include "plugins/attention/attention_prepare.h"

#include "plugins/attention/device_path.h"
#include "plugins/attention/tile_selection.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <stdexcept>

namespace vidgraph::attention {
namespace {

std::string method_names(const std::vector<plugin::MethodInfo>& methods) {
  std::string names;
  for (const auto& m : methods) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

std::string grid_text(const plugin::TokenGrid& g) {
  return "(" + std::to_string(g.t) + ", " + std::to_string(g.h) + ", " + std::to_string(g.w) + ")";
}

// A device named without an index ("cuda") is the current one of its type: the tensors of the
// calls always carry an index, and the preparation is checked against them.
c10::Device concrete(const c10::Device& d) {
  if (d.is_cpu() || d.has_index()) return d;
  return c10::impl::getDeviceGuardImpl(d.type())->getDevice();
}

// The parts that may throw (param resolution, the device path, the layout); prepare_state turns a
// throw into its error.
std::shared_ptr<const PreparedState> build(const plugin::MethodInfo& method, const plugin::PrepareRequest& r) {
  auto s = std::make_shared<PreparedState>();
  s->method = method.name;
  s->kind = method.kind;
  s->params = plugin::resolve_params(method, r.params);
  s->dtype = r.dtype;
  s->head_dim = r.head_dim;
  s->grid = r.grid;
  DevicePath& path = require_device_path(r.device.type(), method.name);
  s->path = &path;
  s->device = concrete(r.device);
  TORCH_CHECK(r.grid.t > 0 && r.grid.h > 0 && r.grid.w > 0, "method ", method.name,
              ": the token grid must be positive, got ", grid_text(r.grid));
  TORCH_CHECK(r.grid.size() > 0, "method ", method.name, ": the token grid ", grid_text(r.grid),
              " has more tokens than a 64-bit count holds; check the grid");
  TORCH_CHECK(at::isFloatingType(r.dtype), "method ", method.name, ": q, k and v must be floating point, got ",
              r.dtype);
  if (s->kind == plugin::MethodKind::Dense) {
    s->layout = tile_layout({1, 1, r.grid.size()}, {1, 1, 64}, s->device);
  } else {
    const auto t = plugin::param_as_int_list(s->params, "tile");
    s->layout = tile_layout(r.grid, {t.at(0), t.at(1), t.at(2)}, s->device);
    s->topk = topk_for_sparsity(plugin::param_as_double(s->params, "sparsity"), s->layout->num_tiles);
  }
  if (s->kind == plugin::MethodKind::SparseLinear) s->feature_map = plugin::param_as_string(s->params, "feature_map");
  std::string why;
  TORCH_CHECK(path.supports(r.head_dim, s->layout->tile_volume, r.dtype, &why), "method ", method.name, " on ",
              path.name(), ": ", why);
  path.prepare(s->device);
  return s;
}

}  // namespace

std::shared_ptr<const PreparedState> prepare_state(const std::vector<plugin::MethodInfo>& methods,
                                                   const plugin::PrepareRequest& request, std::string* error) {
  const plugin::MethodInfo* method = plugin::find_method(methods, request.method);
  if (method == nullptr) {
    *error = "unknown attention method '" + request.method + "' (" + method_names(methods) + ")";
    return nullptr;
  }
  try {
    return build(*method, request);
  } catch (const c10::Error& e) {
    *error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return nullptr;
}

}  // namespace vidgraph::attention
