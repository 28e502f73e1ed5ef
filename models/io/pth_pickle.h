// Restricted unpickler for the `data.pkl` record of a PyTorch zip `.pth` state dict.
// Contract: accepts only what `torch.save(model.state_dict())` writes with pickle protocol 2..4:
// a dict or `collections.OrderedDict` (optionally with a `_metadata` BUILD state, ignored) mapping
// strings to tensors rebuilt by `torch._utils._rebuild_tensor_v2` (or `_rebuild_parameter`) over
// persistent-id storages `('storage', torch.<T>Storage, key, location, numel)`. Any other global
// (e.g. `os.system`), any object-building opcode, malformed or truncated data is rejected with a
// std::runtime_error naming the origin and the offending item. Nothing is ever executed or imported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace vidgraph::model_io {

// One tensor of the state dict, described against its storage entry `data/<storage_key>`.
struct PthTensorRecord {
  std::string name;
  at::ScalarType dtype = at::ScalarType::Float;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;  // in elements
  std::string storage_key;
  int64_t storage_numel = 0;  // elements the pickle declares for the storage
};

// `origin` names the file in error messages. Records keep the pickle's key order.
std::vector<PthTensorRecord> pth_unpickle_state_dict(const std::string& pickle, const std::string& origin);

}  // namespace vidgraph::model_io
