// Implements comfy_solvers.h.
#include "interop/comfy_solvers.h"

#include <algorithm>

namespace vidgraph::comfy {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

double shifted(double t, double shift) { return shift * t / (1.0 + (shift - 1.0) * t); }

}  // namespace

SolverChoice map_solver(const std::string& sampler_name, const std::string& scheduler) {
  SolverChoice c;
  if (sampler_name == "uni_pc_bh2" || sampler_name == "uni_pc") {
    c.scheduler = "unipc";
    c.warnings.push_back("sampler " + sampler_name + " is UniPC of order 3" +
                         (sampler_name == "uni_pc" ? std::string(", bh1 variant") : std::string()) +
                         "; Vidgraph's UniPC is Wan's reference solver (order 2, bh2), so the result differs "
                         "slightly.");
  } else if (sampler_name == "euler") {
    c.scheduler = "euler";
  } else if (starts_with(sampler_name, "euler") || sampler_name == "lcm") {
    c.scheduler = "euler";
    c.warnings.push_back("sampler " + sampler_name + " has no equivalent in Vidgraph; plain Euler was used.");
  } else {
    c.scheduler = "unipc";
    c.warnings.push_back("sampler " + (sampler_name.empty() ? std::string("(none)") : sampler_name) +
                         " has no equivalent in Vidgraph; UniPC was used.");
  }
  if (!scheduler.empty() && scheduler != "simple") {
    c.warnings.push_back("scheduler " + scheduler + " spaces the noise levels differently; Vidgraph's shifted "
                         "linear schedule (ComfyUI's simple) was used.");
  }
  return c;
}

double boundary_for_split(int split, int steps, double shift) {
  if (steps < 1 || split <= 0) return 1.0;
  if (split >= steps) return 0.001;
  const double before = shifted(1.0 - double(split - 1) / steps, shift);
  const double at = shifted(1.0 - double(split) / steps, shift);
  return std::clamp((before + at) / 2.0, 0.001, 1.0);
}

}  // namespace vidgraph::comfy
