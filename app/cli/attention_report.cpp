// JSON renderings of vidgraph-attention results. See attention_report.h.
#include "app/cli/attention_report.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>

namespace vidgraph::cli {
namespace {

nlohmann::json summary(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return nullptr;
  const at::Tensor d = t.to(at::kDouble);
  return {{"min", d.min().item<double>()}, {"max", d.max().item<double>()}, {"mean", d.mean().item<double>()}};
}

}  // namespace

nlohmann::json selection_stats_json(const plugin::SelectionStats& s) {
  nlohmann::json j;
  j["sparse"] = s.sparse;
  j["query_tiles"] = s.query_tiles;
  j["kv_tiles"] = s.kv_tiles;
  j["topk"] = s.topk;
  j["tile_volume"] = s.tile_volume;
  j["density"] = s.density;
  j["selected_per_query_tile"] = summary(s.selected_per_query_tile);
  j["selected_per_kv_tile"] = summary(s.selected_per_kv_tile);
  nlohmann::json sizes = summary(s.tile_sizes);
  if (!sizes.is_null()) {
    sizes["ragged"] = (s.tile_sizes.to(at::kLong) != s.tile_volume).sum().item<int64_t>();
    sizes.erase("mean");
  }
  j["tile_sizes"] = sizes;
  return j;
}

nlohmann::json methods_json(const std::vector<plugin::MethodInfo>& methods) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : methods) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : m.params) {
      nlohmann::json jp{{"name", p.name},
                        {"type", plugin::param_type_name(p.type)},
                        {"default", plugin::param_value_to_string(p.default_value)},
                        {"description", p.description}};
      if (p.type == plugin::ParamType::String) {
        jp["choices"] = p.choices;
      } else if (p.type != plugin::ParamType::Bool) {
        jp["min"] = p.min;
        jp["max"] = p.max;
        jp["max_exclusive"] = p.max_exclusive;
      }
      params.push_back(jp);
    }
    out.push_back({{"name", m.name},
                   {"description", m.description},
                   {"params", params},
                   {"uses_gate", m.uses_gate},
                   {"uses_proj_l", m.uses_proj_l}});
  }
  return out;
}

}  // namespace vidgraph::cli
