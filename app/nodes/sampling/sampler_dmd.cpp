// Implements sampler_dmd.h.
#include "nodes/sampling/sampler_dmd.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "models/sampling/dmd_solver.h"
#include "nodes/common/node_util.h"

namespace vidgraph::nodes {

bool parse_dmd_timesteps(const std::string& text, std::vector<double>* out, std::string* error) {
  std::vector<double> values;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const std::string trimmed = item.substr(first, item.find_last_not_of(" \t") - first + 1);
    char* end = nullptr;
    const double v = std::strtod(trimmed.c_str(), &end);
    if (end == trimmed.c_str() || *end != '\0') {
      *error = "'" + trimmed + "' is not a number";
      return false;
    }
    values.push_back(v);
  }
  try {
    sampling::dmd_schedule(values);  // the same checks the sampler applies
  } catch (const std::invalid_argument& e) {
    *error = e.what();
    return false;
  }
  *out = std::move(values);
  return true;
}

engine::Status apply_dmd_params(const engine::NodeContext& ctx, SamplerSetup& s) {
  if (ctx.param_string("scheduler") != "dmd") return {};
  const std::string text = ctx.param_string("dmd_timesteps");
  std::string error;
  if (!parse_dmd_timesteps(text, &s.options.dmd_timesteps, &error)) {
    return node_error(ctx, "dmd_timesteps '" + text + "' is not a valid step list (" + error +
                           "); give decreasing timesteps out of 1000, e.g. 1000,757,522 (FastWan2.2).");
  }
  s.options.solver = sampling::SolverKind::Dmd;
  s.options.steps = static_cast<int>(s.options.dmd_timesteps.size());
  s.info["steps"] = std::to_string(s.options.steps);
  s.info["dmd_timesteps"] = text;
  if (s.options.guide_scale != 1.0) {
    ctx.log_warn("DMD with guidance " + std::to_string(s.options.guide_scale) + ": distilled few-step "
                 "models such as FastWan are meant to run at guidance 1 (one model call per step).");
  }
  return {};
}

}  // namespace vidgraph::nodes
