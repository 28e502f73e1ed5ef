// prepare() for tensors at hand: the request's device, dtype and head dim taken from q ([B, S, H, D]),
// a refusal thrown. For tools and tests that hold the tensors before they prepare; models build
// their requests from the model's config (wan::AttentionChoice).
#pragma once

#include "plugins/api/attention_backend.h"

#include <c10/util/StringUtil.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace vidgraph::plugin {

// The backend's preparation of `method` with `params` for calls on tensors like `q` over `grid`;
// throws std::invalid_argument with the backend's sentence when it refuses (or when q is not 4-D).
inline std::shared_ptr<const PreparedAttention> prepare_for(AttentionBackend& backend, const std::string& method,
                                                            const ParamMap& params, const at::Tensor& q,
                                                            const TokenGrid& grid) {
  if (!q.defined() || q.dim() != 4)
    throw std::invalid_argument("method " + method + ": q must be [B, S, H, D], got " +
                                (q.defined() ? c10::str(q.sizes()) : std::string("nothing")));
  PrepareRequest request;
  request.method = method;
  request.params = params;
  request.device = q.device();
  request.dtype = q.scalar_type();
  request.head_dim = q.size(3);
  request.grid = grid;
  PrepareResult r = backend.prepare(request);
  if (!r.prepared) throw std::invalid_argument(r.error);
  return r.prepared;
}

}  // namespace vidgraph::plugin
