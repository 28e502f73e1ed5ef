// Preparation of a method for calls of one shape (AttentionBackend::prepare): every check that needs
// no tensor, done once, and the set-up every call would otherwise redo: params resolved, the tile
// layout built (its index tensors on the device), topk computed from the sparsity, the device path's
// per-device settings made (the GPU path's kernel tuning row). The state is immutable and shared by
// the calls that carry it (PreparedAttention::state).
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/attention/tile_layout.h"

#include <memory>
#include <string>
#include <vector>

namespace vidgraph::attention {

class DevicePath;

struct PreparedState {
  std::string method;
  plugin::MethodKind kind = plugin::MethodKind::Dense;  // the descriptor's
  DevicePath* path = nullptr;                // the device's path, found once (never null when prepared)
  plugin::ParamMap params;                   // resolved: defaults filled, values checked
  c10::Device device = c10::kCPU;
  at::ScalarType dtype = at::kFloat;
  int64_t head_dim = 0;
  plugin::TokenGrid grid;
  std::shared_ptr<const TileLayout> layout;  // vsa, sla_star: the grid's tiles; full: 64-token blocks of S
  int64_t topk = 0;                          // vsa, sla_star: KV tiles kept per query tile
  std::string feature_map;                   // sla_star
};

// The state for `request`, or null with *error set to a sentence naming what was refused (method,
// param, device, dtype, head dim, tile or grid). The device path settles its per-device work here
// (DevicePath::prepare), so calls do none.
std::shared_ptr<const PreparedState> prepare_state(const std::vector<plugin::MethodInfo>& methods,
                                                   const plugin::PrepareRequest& request, std::string* error);

}  // namespace vidgraph::attention
