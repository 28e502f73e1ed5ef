// A test's call through the attention backend's only door: prepare the method with its params for the
// call's tensors (q sets device, dtype and head dim) over a grid, and attach the preparation.
#pragma once

#include "plugins/api/attention_backend.h"

#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>

namespace test_common {

// Throws std::invalid_argument with the backend's sentence when it refuses.
inline void prepare_call(vidgraph::plugin::AttentionBackend& backend, vidgraph::plugin::AttentionCall& call,
                         const std::string& method, const vidgraph::plugin::ParamMap& params,
                         const vidgraph::plugin::TokenGrid& grid) {
  TORCH_CHECK(call.q.defined() && call.q.dim() == 4, "method ", method, ": q must be [B, S, H, D], got ",
              call.q.sizes());
  vidgraph::plugin::PrepareRequest r;
  r.method = method;
  r.params = params;
  r.device = call.q.device();
  r.dtype = call.q.scalar_type();
  r.head_dim = call.q.size(3);
  r.grid = grid;
  vidgraph::plugin::PrepareResult p = backend.prepare(r);
  if (!p.prepared) throw std::invalid_argument(p.error);
  call.prepared = std::move(p.prepared);
}

}  // namespace test_common
