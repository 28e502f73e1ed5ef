// Checks at the door of every call: shapes, dtypes, devices, the grid, the extras and (on the CPU)
// non-finite inputs. Each failure is a c10::Error whose message names the tensor, the rule, what was
// expected and what was got.
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/attention/device_path.h"

namespace vidgraph::attention {

// Throws on the first violated rule. `tile_volume` is the method's tile volume (64 for full).
void check_attention_call(const plugin::AttentionCall& call, DevicePath& path, int64_t tile_volume);

}  // namespace vidgraph::attention
