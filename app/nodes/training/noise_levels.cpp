#include "nodes/training/noise_levels.h"

#include <string>

#include "nodes/training/training_output.h"

namespace vidgraph::nodes {

std::vector<engine::ParamSpec> noise_level_params() {
  using engine::ParamSpec;
  return {ParamSpec::enumeration("noise_levels", {"auto", "all", "high_noise", "low_noise"}, "auto",
                                 "The timesteps to train on: all, or one expert's side of expert_boundary (a "
                                 "Wan2.2-A14B expert runs only there when sampling); auto = the side of the expert "
                                 "the model is, else all."),
          ParamSpec::real("expert_boundary", 0.0, 0.0, 0.999,
                          "With an expert's noise levels: the boundary as a fraction of the 1000 timesteps; 0 = "
                          "the model's own (0.875 for T2V-A14B, 0.9 for I2V-A14B).")};
}

NoiseLevels noise_levels(const engine::NodeContext& ctx, const DitHandle& dit, const char* activity) {
  std::string levels = ctx.param_string("noise_levels");
  if (levels == "auto") {
    levels = dit.expert == WanExpert::HighNoise  ? "high_noise"
             : dit.expert == WanExpert::LowNoise ? "low_noise"
                                                 : "all";
  }
  NoiseLevels out;
  if (levels == "all") return out;
  double boundary = ctx.param_float("expert_boundary");
  if (boundary == 0.0) boundary = dit.model->config().in_dim == 36 ? 0.9 : 0.875;  // I2V-A14B : T2V-A14B
  const bool high = levels == "high_noise";
  (high ? out.sigma_min : out.sigma_max) = boundary;
  const std::string timestep = std::to_string(static_cast<int>(boundary * 1000.0 + 0.5));
  ctx.log_info(std::string(activity) + " the " + (high ? "high" : "low") + "-noise expert's timesteps: " +
               (high ? "from " + timestep + " to 1000" : "below " + timestep) + " (expert_boundary " +
               format_number("%.3g", boundary) + ").");
  return out;
}

}  // namespace vidgraph::nodes
