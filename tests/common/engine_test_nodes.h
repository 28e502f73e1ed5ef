// Test-only node types for the engine, workflow and CLI suites (never part of the product).
//
// Value type "NUMBER" holds a double. Types (category "test"):
//   Number   → out: value            params: value (Float)
//   Add      a, b? → sum             params: offset (Float [-1000, 1000])
//   Scale    x → out                 params: factor (Float [-100, 100])
//   Slow     x? → out                params: steps (Int [1, 100000]), step_ms (Int [0, 1000]); progress
//                                    per step, polls cancellation; out = x (or 0) + steps
//   Learn    → out                   params: steps (Int [1, 1000]); progress per step with metrics
//                                    loss = 1 / step and lr = 0.001; out = the last loss
//   Fail     x? → out                params: message (String); throws std::runtime_error(message)
//   Refuse   x? → out                params: message (String); returns an Error value
//   Blob     → out (type "BLOB")     params: bytes (Int [0, 1e12]), tag (String); a value whose
//                                    `bytes` is the param (for cache-budget tests)
//   Sink     value (*) → (none)      records the last NUMBER it got (last_sink_value)
//   Kinds    → out                   one param of every ParamKind (validation/override tests)
//   WriteText x? → path (STRING)     params: file (FilePath), text (Text); writes `text` to the
//                                    resolved path; refuses to replace a file unless overwrite
//   Versioned → out                  version 2; v1 had param "amount", v2 calls it "value" (upgrade);
//                                    logs "value <value>"
// Every compute increments compute_count(node_id), so tests can prove what ran.
#pragma once

#include <string>

#include "engine/registry.h"

namespace vidgraph::test {

void register_engine_test_nodes(engine::Registry& registry);

int compute_count(const std::string& node_id);
int total_compute_count();
void reset_compute_counts();
double last_sink_value();

}  // namespace vidgraph::test
