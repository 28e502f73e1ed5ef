// Implements training_output.h.
#include "nodes/training/training_output.h"

#include <cstdio>
#include <optional>

#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"

namespace vidgraph::nodes {

OutputKind weights_kind(const nlohmann::json&) { return OutputKind::Safetensors; }

std::string format_number(const char* format, double value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

engine::ParamSpec weights_dtype_param() {
  return engine::ParamSpec::enumeration("weights_dtype", {"auto", "float32", "bfloat16", "float16"}, "auto",
                                "The dtype of the written weights (auto: a LoRA in float32, a full checkpoint "
                                "in the model's dtype); bfloat16 or float16 halve a float32 file, as ComfyUI's "
                                "LoRAs are.");
}

engine::Result<std::string> write_weights(const engine::NodeContext& ctx, const wan::WanModelImpl& model,
                                          train::TrainMode mode, const std::set<std::string>& leave_out) {
  const OutputTarget target = writer_target(ctx.params(), ctx.options(), "output", weights_kind);
  if (std::string problem = check_output_target(target); !problem.empty()) return node_error(ctx, problem);
  remove_stale_temporaries(target.path);
  const std::string temp = temporary_sibling(target.path);
  const std::optional<at::ScalarType> dtype = dtype_param(ctx.param_string("weights_dtype"));
  try {
    if (mode == train::TrainMode::Lora) train::save_lora(model, temp, leave_out, dtype.value_or(at::kFloat));
    else train::save_full_checkpoint(model, temp, dtype);
  } catch (const std::exception& e) {
    remove_temporary(temp);
    return node_error(ctx, std::string("Could not write the trained weights: ") + e.what());
  }
  const Published published = publish_output(temp, target);
  if (!published.error.empty()) {
    remove_temporary(temp);
    return node_error(ctx, published.error);
  }
  ctx.wrote(published.path);
  return published.path;
}

}  // namespace vidgraph::nodes
