// Load LoRA: a MODEL in, the same DiT with a LoRA applied out. The output shares every parameter
// the LoRA leaves alone with the input model (which the engine's cache keeps, unchanged) and holds
// its own copies only of the layers the LoRA touches; chain several to combine LoRAs.
#include <c10/util/Exception.h>

#include "models/io/wan_dit_identity.h"
#include "models/wan/wan_lora.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/input_file.h"
#include "nodes/model/model_handles.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

// A14B LoRAs come in pairs named for their expert (lightx2v's ..._high_noise / ..._low_noise): the
// expert this DiT is, for the log, and a warning when the file names the other one.
std::string expert_of(const engine::NodeContext& ctx, const DitHandle& dit, const std::string& path) {
  const std::string is = dit.expert == WanExpert::HighNoise  ? "high-noise expert"
                         : dit.expert == WanExpert::LowNoise ? "low-noise expert"
                                                             : "";
  const std::string named = model_io::expert_in_file_name(path);
  if (!named.empty() && !is.empty() && named != is) {
    ctx.log_warn("The LoRA '" + path + "' is named for the " + named + " but goes to the " + is +
                 "; if that is a mix-up, swap the files of the two Load LoRA nodes.");
  }
  return is;
}

engine::Result<engine::ValueMap> compute_load_lora(engine::NodeContext& ctx) {
  const std::string path = ctx.param_path("path");
  const std::string bad = check_input_path("path", path, InputKind::File, "a LoRA .safetensors file");
  if (!bad.empty()) return node_error(ctx, bad);
  const DitHandle& base = ctx.input_as<DitHandle>("model");
  const double strength = ctx.param_float("strength");
  wan::WanLoraResult result;
  try {
    const wan::WanLora lora = wan::wan_read_lora(path);
    result = wan::wan_apply_lora(*base.model, lora, strength);
    const std::string unmatched = wan::wan_lora_unmatched_sentence(lora, result);
    if (!unmatched.empty()) ctx.log_warn(unmatched + ".");
  } catch (const c10::Error& e) {
    return node_error(ctx, "Applying the LoRA '" + path + "' failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return node_error(ctx, e.what());
  }
  const std::string expert = expert_of(ctx, base, path);
  ctx.log_info("LoRA '" + path + "'" + (expert.empty() ? "" : " on the " + expert) + " at strength " +
               std::to_string(strength) + ": " + std::to_string(result.layers_patched) + " parameters changed (" +
               std::to_string(result.private_bytes >> 20) + " MiB of their own; the rest shared).");
  DitHandle out{result.model, base.path + " + " + path, base.device, base.dtype, base.expert,
                base.swap_offload_blocks};
  return engine::ValueMap{{"model", engine::make_value(kModelType, std::move(out), result.private_bytes)}};
}

}  // namespace

engine::NodeType load_lora_node() {
  engine::NodeType t;
  t.name = "LoadLoRA";
  t.display_name = "Load LoRA";
  t.category = "model";
  t.description = "Applies a LoRA to the DiT: W + strength · (alpha / rank) · up · down on each layer it "
                  "names. Reads ComfyUI / kohya / lightx2v files (lora_down / lora_up, alpha, diff) and "
                  "diffusers / PEFT files (lora_A / lora_B). Only the changed layers take new memory; "
                  "chain several Load LoRA nodes to combine LoRAs.";
  t.inputs = {{"model", kModelType, false, "The DiT from Load Wan Model (or another Load LoRA)."}};
  t.outputs = {{"model", kModelType, false, "The DiT with the LoRA applied."}};
  t.params = {
      ParamSpec::file_path("path", "", "LoRA (*.safetensors)", "The LoRA file."),
      ParamSpec::real("strength", 1.0, -4.0, 4.0, "How much of the LoRA to add; 0 = none, negative subtracts it."),
  };
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    return file_param_fingerprint(params, options, "path");
  };
  t.compute = compute_load_lora;
  return t;
}

}  // namespace vidgraph::nodes
