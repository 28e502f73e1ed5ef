// Checks at the door of every call against its preparation (attention_prepare.h): shapes, dtypes,
// devices, the grid, the extras and (on the CPU) non-finite inputs. What prepare settled (method,
// params, the path's support of dtype, head dim and tile) is not checked again. Each failure is a
// c10::Error whose message names the tensor, the rule, what was expected and what was got.
#pragma once

#include "plugins/api/attention_backend.h"
#include "plugins/attention/attention_prepare.h"

namespace vidgraph::attention {

// Throws on the first violated rule.
void check_attention_call(const plugin::AttentionCall& call, const PreparedState& prepared);

}  // namespace vidgraph::attention
