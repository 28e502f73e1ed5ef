// The one bridge between the attention plugin's method descriptors (plugins/api MethodInfo and
// ParamDescriptor) and the workflow params of the nodes that run it (engine ParamSpec; Wan Sampler,
// Train Wan): how a plugin param appears in a workflow, how it is checked at validation, and how a
// node's value reaches the plugin.
//
// Naming: flat, the plugin's own name ("sparsity", "tile", "feature_map"). Methods declaring a name
// with the same rules (type, default, range, choices) share one workflow param: vsa and sla_star
// share sparsity and tile. A later method declaring the name with other rules, or a name the sampler
// already uses for something else, gets "<method>_<name>". Each spec's description ends with the
// methods that read it; the other methods ignore it.
// Types: Float -> float and Int -> int with the exact range (an open upper bound as max_exclusive),
// Bool -> bool, String with choices -> enum, String -> string, IntList -> string "4,4,4" (or
// "4x4x4") whose rule is the plugin API's own check of the descriptor. So a value the plugin would
// refuse is a validation error naming the param, before any node runs.
//
// A workflow saved against another plugin version keeps its values: a param this plugin no longer
// declares is reported by validation as not a param of WanSampler (kept, written back), a new one
// takes its default.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/node_type.h"
#include "engine/result.h"
#include "plugins/api/attention_params.h"

namespace vidgraph::nodes {

// The workflow spec of plugin param `d` under another key, default and description: a node param
// that feeds `d` (Train Wan's sparsity_start and sparsity_target follow the plugin's sparsity).
engine::ParamSpec spec_like(const plugin::ParamDescriptor& d, const std::string& key, const nlohmann::json& def,
                            const std::string& description);

class AttentionParamSchema {
 public:
  // `reserved`: param names the node already uses; a plugin param of that name gets the prefix.
  // `node_supplied`: plugin params the node sets itself (Train Wan's sparsity, from its schedule):
  // no workflow param, and params_for() leaves them out.
  AttentionParamSchema(std::vector<plugin::MethodInfo> methods, const std::vector<std::string>& reserved,
                       const std::vector<std::string>& node_supplied = {});

  const std::vector<plugin::MethodInfo>& methods() const { return methods_; }
  std::vector<std::string> method_names() const;
  const plugin::MethodInfo* find_method(const std::string& name) const;
  // The first method's descriptor of plugin param `name` (nullptr when no method declares it).
  const plugin::ParamDescriptor* descriptor(const std::string& name) const;

  // One spec per workflow param, in order of first declaration.
  const std::vector<engine::ParamSpec>& specs() const { return specs_; }

  // The workflow param that carries `method`'s param `param` ("" if the method has none such).
  std::string key_of(const std::string& method, const std::string& param) const;

  // `method`'s params read from a node's params (defaults filled), typed for the plugin. Values are
  // converted, not range-checked (validation did that); an error names the workflow param whose
  // value is not of its type.
  engine::Result<plugin::ParamMap> params_for(const plugin::MethodInfo& method, const nlohmann::json& node_params) const;
  // The same for the method named `method`; an error sentence when the plugin has no such method.
  engine::Result<plugin::ParamMap> params_for(const std::string& method, const nlohmann::json& node_params) const;

 private:
  struct Entry {
    std::string method, param, key;
  };
  std::vector<plugin::MethodInfo> methods_;
  std::vector<Entry> entries_;
  std::vector<engine::ParamSpec> specs_;
};

}  // namespace vidgraph::nodes
