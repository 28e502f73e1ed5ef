// Converter (comfy_converter.h): following a ComfyUI output to its Vidgraph equivalent; the model
// loaders folded into one Load Wan Model, Load LoRA, Load Image and kept unknown nodes.
#include <algorithm>
#include <cctype>

#include "interop/comfy_converter.h"

namespace vidgraph::comfy {

using engine::InputLink;
using engine::Result;
using nlohmann::json;

namespace {

bool is_unet(const std::string& t) { return t == "UNETLoader" || t == "UnetLoaderGGUF"; }
bool is_clip(const std::string& t) { return t == "CLIPLoader" || t == "CLIPLoaderGGUF"; }

// The name model_io::low_noise_partner looks for beside a high-noise expert ("" when none).
std::string partner_name(const std::string& high) {
  std::string lower = high;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* tag : {"high_noise", "highnoise", "high-noise"}) {
    const std::size_t at = lower.find(tag);
    if (at == std::string::npos) continue;
    std::string low = high;
    low.replace(at, 4, high[at] == 'H' ? "Low" : "low");
    return low;
  }
  return "";
}

// A name safe as (the start of) a Vidgraph node id.
std::string id_base(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return out.substr(0, 48);
}

}  // namespace

Result<InputLink> Converter::emit_input(const ComfyNode& node, const std::string& input, const std::string& role) {
  return emit(follow(graph_, node, input), describe(node) + "'s input '" + input + "'", role);
}

Result<InputLink> Converter::emit(const Reached& reached, const std::string& needed_by, const std::string& role) {
  if (!reached.node) {
    // As ComfyUI: a muted node, or a bypassed one with no input of the type, gives nothing; an
    // input left open this way is an error only where the reader requires it (validation says so).
    if (reached.muted) {
      report_.notes.push_back(describe(*reached.muted) + " is muted, so " + needed_by + " was left unconnected.");
    } else if (reached.blocked && reached.blocked->type == kSwitchType && reached.blocked->runs()) {
      report_.notes.push_back(describe(*reached.blocked) + " has nothing connected on the side its switch picks, so " +
                              needed_by + " was left unconnected.");
    } else if (reached.blocked) {
      report_.notes.push_back(describe(*reached.blocked) + " is bypassed and has no input of the type to pass on, so " +
                              needed_by + " was left unconnected.");
    }
    return InputLink{};
  }
  const ComfyNode& n = *reached.node;
  const auto memo = emitted_.find(n.id);
  if (memo != emitted_.end() && memo->second.count(reached.slot)) return memo->second.at(reached.slot);
  if (in_progress_.count(n.id)) {
    return engine::make_error(describe(n) + " feeds itself through a cycle of links; fix the workflow in ComfyUI.");
  }
  in_progress_.insert(n.id);
  Result<InputLink> link = InputLink{};
  if (is_unet(n.type) || is_clip(n.type) || n.type == "VAELoader") {
    link = emit_loader(n, reached.slot);
  } else if (n.type == "LoraLoaderModelOnly" || n.type == "LoraLoader") {
    link = emit_lora(n, reached.slot, role);
  } else if (n.type == "ModelSamplingSD3") {
    report_.map(n, "its shift became Wan Sampler's shift.");
    link = emit_input(n, "model", role);
  } else if (n.type == "LoadImage") {
    link = emit_image(n);
  } else if (n.type == "VAEDecode") {
    link = emit_decode(n);
  } else if (n.type == "KSampler" || n.type == "KSamplerAdvanced") {
    link = emit_sampler(n);
  } else if (n.type == "CLIPTextEncode") {
    link = emit_prompt(n, nullptr);
  } else {
    link = emit_unknown(n, reached.slot);
  }
  in_progress_.erase(n.id);
  if (link.ok()) emitted_[n.id][reached.slot] = *link;
  return link;
}

std::string Converter::model_node() {
  if (model_id_.empty()) {
    engine::Node m = make_node("model", "LoadWanModel", nullptr);
    model_id_ = commit(std::move(m), "model").node;
  }
  return model_id_;
}

Result<InputLink> Converter::emit_loader(const ComfyNode& n, int slot) {
  const std::string id = model_node();
  engine::Node& model = *find(id);
  if (is_unet(n.type)) {
    const auto expert = expert_.find(n.id);
    const std::string port = expert == expert_.end() ? "model" : expert->second;
    const std::string param = port == "model" ? "dit" : "low_noise_dit";
    const std::string name = text_or(widget_value(graph_, n, "unet_name"), "");
    if (files_.contains(param) && files_[param] != name) {
      report_.approximate(n, "a second DiT file '" + name + "' has no place in Load Wan Model '" + id + "', which "
                             "already loads '" + files_[param].get<std::string>() + "'; that one is used.");
      return InputLink{id, port};
    }
    files_[param] = name;
    if (port == "low_noise_model") low_loader_ = &n;
    const std::string dtype = text_or(n.values.value("weight_dtype", json()), "default");
    if (dtype.rfind("fp8", 0) == 0) {
      model.params["keep_fp8"] = true;
      report_.approximate(n, "weight_dtype " + dtype + " became keep_fp8 on Load Wan Model '" + id + "': an fp8 file "
                             "stays fp8 in memory, but a 16-bit file is not cast to fp8 and no fast fp8 matmul is used.");
    } else {
      report_.map(n, std::string(port == "model" ? "its DiT" : "its low-noise expert") + " '" + name +
                         "' is loaded by Load Wan Model '" + id + "'.");
    }
    return InputLink{id, port};
  }
  if (is_clip(n.type)) {
    files_["text_encoder"] = text_or(widget_value(graph_, n, "clip_name"), "");
    if (text_or(n.values.value("device", json()), "default") == "cpu") model.params["text_encoder_device"] = "cpu";
    report_.map(n, "its text encoder is loaded by Load Wan Model '" + id + "'.");  // type wan: refuse_other_family
    return InputLink{id, slot == 0 ? "text_encoder" : ""};
  }
  files_["vae"] = text_or(widget_value(graph_, n, "vae_name"), "");
  report_.map(n, "its VAE is loaded by Load Wan Model '" + id + "'.");
  return InputLink{id, "vae"};
}

Result<InputLink> Converter::emit_lora(const ComfyNode& n, int slot, const std::string& role) {
  if (slot == 1) {  // LoraLoader's CLIP output: the text encoder, without the LoRA
    report_.approximate(n, "its text-encoder part (strength_clip) is not applied; Load LoRA patches the DiT only.");
    return emit_input(n, "clip", role);
  }
  auto base = emit_input(n, "model", role);
  if (!base.ok()) return base.error();
  engine::Node lora = make_node(role.empty() ? "lora" : "lora_" + role, "LoadLoRA", &n);
  if (!base->node.empty()) lora.inputs["model"] = *base;
  const std::string name = text_or(widget_value(graph_, n, "lora_name"), "");
  const double strength = number_or(widget_value(graph_, n, "strength_model"), 1.0);
  lora.params = {{"path", name}, {"strength", std::clamp(strength, -4.0, 4.0)}};
  carry(n, "lora_name", lora, "path");
  carry(n, "strength_model", lora, "strength");
  if (strength < -4.0 || strength > 4.0) {
    report_.approximate(n, "strength " + num(strength) + " is outside Load LoRA's -4..4; " +
                               num(std::clamp(strength, -4.0, 4.0)) + " was used.");
  } else {
    report_.map(n, "became Load LoRA '" + lora.id + "' at strength " + num(strength) + ".");
  }
  report_.notes.push_back("Load LoRA '" + lora.id + "' reads '" + name + "' beside the workflow file (ComfyUI looks "
                          "in its models/loras folder): set --set " + lora.id + ".path=<ComfyUI>/models/loras/" + name +
                          " when the file is not there.");
  return commit(std::move(lora), "model");
}

Result<InputLink> Converter::emit_image(const ComfyNode& n) {
  engine::Node image = make_node("image", "LoadImage", &n);
  const std::string name = text_or(widget_value(graph_, n, "image"), "");
  image.params = {{"path", name}};
  carry(n, "image", image, "path");
  report_.map(n, "became Load Image '" + image.id + "'.");
  report_.notes.push_back("Load Image '" + image.id + "' reads '" + name + "' beside the workflow file (ComfyUI looks "
                          "in its input folder): set --set " + image.id + ".path=FILE when the image is elsewhere.");
  return commit(std::move(image), "image");
}

Result<InputLink> Converter::emit_unknown(const ComfyNode& n, int slot) {
  const std::string output = "out" + std::to_string(slot);
  if (const auto kept = unknown_.find(n.id); kept != unknown_.end()) return InputLink{kept->second, output};
  engine::Node node = make_node("comfy_" + id_base(n.id), "ComfyUI:" + n.type, &n);
  unknown_[n.id] = node.id;
  for (const ComfyInput& in : n.inputs) {
    if (!in.linked) continue;
    const Reached from = follow(graph_, n, in.name);
    if (from.node && from.node->type.rfind("Primitive", 0) == 0) {  // a widget fed by a primitive: a value
      node.params[in.name] = widget_value(graph_, n, in.name);
      continue;
    }
    auto link = emit_input(n, in.name);
    if (!link.ok()) {
      report_.notes.push_back("The link into " + describe(n) + "'s input '" + in.name + "' was dropped: " +
                              link.error().message);
    } else if (!link->node.empty() && !link->output.empty()) {
      node.inputs[in.name.empty() ? "in" : in.name] = *link;
    }
  }
  const json values = n.values.empty() ? json{{"widgets_values", n.raw_widgets}} : n.values;
  for (const auto& [name, value] : values.items()) {
    if (!node.params.contains(name)) node.params[name] = value;
  }
  report_.unsupport(n, "Vidgraph has no equivalent; it is kept as the unknown node '" + node.id + "' (type " +
                           node.type + "), and since a video output needs it the workflow does not validate until "
                           "it is replaced.");
  commit(std::move(node), output);
  return InputLink{unknown_[n.id], output};
}

void Converter::note_model_files() {
  if (model_id_.empty()) return;
  engine::Node& model = *find(model_id_);
  model.extra["comfyui_files"] = files_;
  std::string names;
  for (const auto& [param, name] : files_.items()) names += (names.empty() ? "" : ", ") + param + " '" + name.get<std::string>() + "'";
  const std::string were = names.empty() ? "" : "; ComfyUI's files were " + names + " (kept in the node as comfyui_files)";
  report_.notes.push_back(
      "Load Wan Model '" + model_id_ + "' picks its files by what they hold from model_path or the folders of "
      "extra_model_paths.yaml, not by ComfyUI's names (a bare name would be looked for beside the workflow file), "
      "so its file params were left empty" + were + ". Run with --set " + model_id_ +
      ".model_path=<ComfyUI>/models or VIDGRAPH_MODEL_PATHS=extra_model_paths.yaml.");
  if (!files_.contains("low_noise_dit")) return;
  const std::string high = files_.value("dit", std::string());
  const std::string low = files_["low_noise_dit"].get<std::string>();
  report_.notes.push_back("With two experts, set --set " + model_id_ + ".dit=<ComfyUI>/models/diffusion_models/" + high +
                          ": Load Wan Model then finds the low-noise expert beside it by name.");
  if (low_loader_ && partner_name(high) != low) {
    report_.approximate(*low_loader_, "the low-noise expert '" + low + "' is not named as the high-noise file's "
                                      "partner ('" + partner_name(high) + "'), and Load Wan Model finds the "
                                      "low-noise expert beside the DiT by that name only; rename or link the file.");
  }
}

}  // namespace vidgraph::comfy
