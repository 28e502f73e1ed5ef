// Implements training_output.h.
#include "nodes/training/training_output.h"

#include <cstdio>

#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"

namespace vidgraph::nodes {

OutputKind weights_kind(const nlohmann::json&) { return OutputKind::Safetensors; }

std::string format_number(const char* format, double value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

engine::Result<std::string> write_weights(const engine::NodeContext& ctx, const wan::WanModelImpl& model,
                                          train::TrainMode mode, const std::set<std::string>& leave_out) {
  const OutputTarget target = writer_target(ctx.params(), ctx.options(), "output", weights_kind);
  if (std::string problem = check_output_target(target); !problem.empty()) return node_error(ctx, problem);
  remove_stale_temporaries(target.path);
  const std::string temp = temporary_sibling(target.path);
  try {
    if (mode == train::TrainMode::Lora) train::save_lora(model, temp, leave_out);
    else train::save_full_checkpoint(model, temp);
  } catch (const std::exception& e) {
    remove_temporary(temp);
    return node_error(ctx, std::string("Could not write the trained weights: ") + e.what());
  }
  const Published published = publish_output(temp, target);
  if (!published.error.empty()) {
    remove_temporary(temp);
    return node_error(ctx, published.error);
  }
  return published.path;
}

}  // namespace vidgraph::nodes
