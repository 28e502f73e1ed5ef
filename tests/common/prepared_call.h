// A test's call through the attention backend's only door: prepare the method with its params for the
// call's tensors (q sets device, dtype and head dim) over a grid, and attach the preparation.
#pragma once

#include "plugins/api/prepare_for.h"

#include <string>

namespace test_common {

// Throws std::invalid_argument with the backend's sentence when it refuses.
inline void prepare_call(vidgraph::plugin::AttentionBackend& backend, vidgraph::plugin::AttentionCall& call,
                         const std::string& method, const vidgraph::plugin::ParamMap& params,
                         const vidgraph::plugin::TokenGrid& grid) {
  call.prepared = vidgraph::plugin::prepare_for(backend, method, params, call.q, grid);
}

}  // namespace test_common
