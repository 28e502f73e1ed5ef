// Implements comfy_widgets.h: one row per class, in ComfyUI's widget order (its nodes' INPUT_TYPES).
#include "interop/comfy_widgets.h"

#include <map>
#include <set>
#include <vector>

namespace vidgraph::comfy {

namespace {

// "control_after_generate" marks the editor's extra choice after a seed widget.
constexpr const char* kControl = "control_after_generate";

const std::map<std::string, std::vector<std::string>>& widget_table() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"UNETLoader", {"unet_name", "weight_dtype"}},
      {"UnetLoaderGGUF", {"unet_name"}},
      {"CLIPLoader", {"clip_name", "type", "device"}},
      {"CLIPLoaderGGUF", {"clip_name", "type"}},
      {"VAELoader", {"vae_name"}},
      {"LoraLoaderModelOnly", {"lora_name", "strength_model"}},
      {"CLIPTextEncode", {"text"}},
      {"ModelSamplingSD3", {"shift"}},
      {"KSampler", {"seed", kControl, "steps", "cfg", "sampler_name", "scheduler", "denoise"}},
      {"KSamplerAdvanced",
       {"add_noise", "noise_seed", kControl, "steps", "cfg", "sampler_name", "scheduler", "start_at_step",
        "end_at_step", "return_with_leftover_noise"}},
      {"Wan22ImageToVideoLatent", {"width", "height", "length", "batch_size"}},
      {"WanImageToVideo", {"width", "height", "length", "batch_size"}},
      {"WanFirstLastFrameToVideo", {"width", "height", "length", "batch_size"}},
      {"WanFunInpaintToVideo", {"width", "height", "length", "batch_size"}},
      {"EmptyHunyuanLatentVideo", {"width", "height", "length", "batch_size"}},
      {"LoadImage", {"image", "upload"}},
      {"CreateVideo", {"fps"}},
      {"SaveVideo", {"filename_prefix", "format", "codec"}},
      {"SaveAnimatedWEBP", {"filename_prefix", "fps", "lossless", "quality", "method"}},
      {"SaveWEBM", {"filename_prefix", "codec", "fps", "crf"}},
      {"Note", {"text"}},
      {"MarkdownNote", {"text"}},
      {"CheckpointLoaderSimple", {"ckpt_name"}},
      {"EmptyLatentImage", {"width", "height", "batch_size"}},
      {"PrimitiveNode", {"value", kControl}},
      {"PrimitiveBoolean", {"value"}},
      {"PrimitiveInt", {"value", kControl}},
      {"PrimitiveFloat", {"value"}},
      {"PrimitiveString", {"value"}},
      {"PrimitiveStringMultiline", {"value"}},
      {"ComfySwitchNode", {"switch"}},
  };
  return table;
}

bool is_control_choice(const nlohmann::json& v) {
  static const std::set<std::string> choices = {"fixed", "increment", "decrement", "randomize"};
  return v.is_string() && choices.count(v.get<std::string>()) > 0;
}

}  // namespace

nlohmann::json name_widget_values(const std::string& type, const nlohmann::json& widgets_values) {
  if (widgets_values.is_object()) return widgets_values;
  nlohmann::json named = nlohmann::json::object();
  const auto row = widget_table().find(type);
  if (row == widget_table().end() || !widgets_values.is_array()) return named;
  std::size_t at = 0;
  for (const std::string& name : row->second) {
    if (at >= widgets_values.size()) break;
    if (name == kControl) {
      if (is_control_choice(widgets_values[at])) ++at;  // older files may lack it
      continue;
    }
    named[name] = widgets_values[at++];
  }
  return named;
}

}  // namespace vidgraph::comfy
