// Converter (comfy_converter.h): KSampler, or a KSamplerAdvanced pair over two experts, with its
// model chain's shift, its prompts and its latent node, as one Wan Sampler.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "interop/comfy_converter.h"
#include "interop/comfy_solvers.h"

namespace vidgraph::comfy {

using engine::InputLink;
using engine::Result;
using nlohmann::json;

namespace {

// WanFunInpaintToVideo is WanFirstLastFrameToVideo in ComfyUI (its clip_vision_output the start's).
const std::set<std::string> kWanLatents = {"Wan22ImageToVideoLatent", "WanImageToVideo", "WanFirstLastFrameToVideo",
                                           "WanFunInpaintToVideo", "EmptyHunyuanLatentVideo"};
// The latent nodes that also pass the prompts on (their outputs 0 and 1), with the image latent added.
const std::set<std::string> kPromptPassing = {"WanImageToVideo", "WanFirstLastFrameToVideo", "WanFunInpaintToVideo"};

struct ModelChain {
  const ComfyNode* loader = nullptr;  // the UNET loader the chain starts from
  const ComfyNode* sampling = nullptr;  // the ModelSamplingSD3 on it, if any
};

// Walks a sampler's model input up through ModelSamplingSD3 and LoRA loaders to its UNET loader.
ModelChain model_chain(const ComfyGraph& graph, const ComfyNode& stage) {
  ModelChain chain;
  Reached r = follow(graph, stage, "model");
  for (int hop = 0; r.node && hop < 256; ++hop) {
    const std::string& t = r.node->type;
    if (t == "UNETLoader" || t == "UnetLoaderGGUF") {
      chain.loader = r.node;
      break;
    }
    if (t == "ModelSamplingSD3" && !chain.sampling) chain.sampling = r.node;
    if (t != "ModelSamplingSD3" && t != "LoraLoaderModelOnly" && t != "LoraLoader") break;
    r = follow(graph, *r.node, "model");
  }
  return chain;
}

// A conditioning source seen through a latent node that passes its prompts on (slot 0, 1).
Reached through_i2v(const ComfyGraph& graph, Reached r) {
  for (int hop = 0; r.node && kPromptPassing.count(r.node->type) && r.slot < 2 && hop < 64; ++hop) {
    r = follow(graph, *r.node, r.slot == 1 ? "negative" : "positive");
  }
  return r;
}

bool is_text(const Reached& r) { return r.node && r.node->type == "CLIPTextEncode"; }

}  // namespace

Result<InputLink> Converter::emit_sampler(const ComfyNode& stage) {
  const ComfyNode* high = &stage;
  const ComfyNode* low = nullptr;
  if (stage.type == "KSamplerAdvanced") {
    const Reached before = follow(graph_, stage, "latent_image");
    if (before.node && before.node->type == "KSamplerAdvanced") {
      high = before.node;
      low = &stage;
    }
  }
  if (low) {
    const ModelChain h = model_chain(graph_, *high), l = model_chain(graph_, *low);
    if (h.loader && h.loader == l.loader) {
      report_.approximate(*low, "its stage runs the same model as " + describe(*high) + ", so both stages became one "
                                "Wan Sampler over all steps.");
      low = nullptr;
    } else {
      if (h.loader) expert_[h.loader->id] = "model";
      if (l.loader) expert_[l.loader->id] = "low_noise_model";
    }
  }
  auto model = emit_input(*high, "model", low ? "high" : "");
  if (!model.ok()) return model.error();
  Result<InputLink> low_model = InputLink{};
  if (low) low_model = emit_input(*low, "model", "low");
  if (!low_model.ok()) return low_model.error();
  engine::Node s = make_node("sampler", "WanSampler", &stage);
  if (!model->node.empty()) s.inputs["model"] = *model;
  if (low && !low_model->node.empty()) s.inputs["low_noise_model"] = *low_model;
  if (auto st = emit_conditioning(s, *high); !st) return st.error();
  if (auto st = emit_latent(s, *high); !st) return st.error();
  s.params["attention"] = "full";  // ComfyUI's attention is dense
  set_shift(s, *high, low);  // first: the expert boundary depends on it
  set_sampler_steps(s, *high, low);
  report_.map(*high, low ? "with " + describe(*low) + " became the two-expert Wan Sampler '" + s.id + "'."
                         : "became Wan Sampler '" + s.id + "'.");
  if (low) report_.map(*low, "is the low-noise stage of Wan Sampler '" + s.id + "'.");
  const InputLink out = commit(std::move(s), "latent");
  emitted_[high->id][0] = out;
  return out;
}

Result<InputLink> Converter::emit_prompt(const ComfyNode& positive, const ComfyNode* negative) {
  if (const auto memo = emitted_.find(positive.id); memo != emitted_.end() && memo->second.count(0)) {
    return memo->second.at(0);
  }
  auto encoder = emit_input(positive, "clip");
  if (!encoder.ok()) return encoder.error();
  engine::Node prompt = make_node("prompt", "Prompt", &positive);
  prompt.params["positive"] = text_or(widget_value(graph_, positive, "text"), "");
  carry(positive, "text", prompt, "positive");
  report_.map(positive, "its text became the positive text of Prompt '" + prompt.id + "'.");
  if (negative) {
    const std::string text = text_or(widget_value(graph_, *negative, "text"), "");
    if (text.empty()) {
      report_.approximate(*negative, "its text is empty, and Vidgraph's Prompt uses the Wan2.2 reference negative "
                                     "prompt for an empty negative.");
    } else {
      prompt.params["negative"] = text;
      carry(*negative, "text", prompt, "negative");
      report_.map(*negative, "its text became the negative text of Prompt '" + prompt.id + "'.");
    }
  }
  const InputLink prompt_link = commit(std::move(prompt), "prompt");
  engine::Node encode = make_node("encode", "EncodeText", &positive);
  encode.inputs["prompt"] = prompt_link;
  if (!encoder->node.empty()) encode.inputs["text_encoder"] = *encoder;
  const InputLink out = commit(std::move(encode), "conditioning");
  emitted_[positive.id][0] = out;
  if (negative) emitted_[negative->id][0] = out;
  return out;
}

engine::Status Converter::emit_conditioning(engine::Node& s, const ComfyNode& stage) {
  const Reached pos = through_i2v(graph_, follow(graph_, stage, "positive"));
  const Reached neg = through_i2v(graph_, follow(graph_, stage, "negative"));
  Result<InputLink> cond = InputLink{};
  if (is_text(pos)) {
    if (neg.node && !is_text(neg)) {
      report_.approximate(stage, "its negative conditioning does not come from a CLIPTextEncode; the Wan2.2 "
                                 "reference negative prompt was used.");
    }
    cond = emit_prompt(*pos.node, is_text(neg) ? neg.node : nullptr);
  } else {
    cond = emit(pos, describe(stage) + "'s input 'positive'");
  }
  if (!cond.ok()) return cond.error();
  if (!cond->node.empty()) s.inputs["conditioning"] = *cond;
  return {};
}

engine::Status Converter::emit_latent(engine::Node& s, const ComfyNode& stage) {
  const Reached r = follow(graph_, stage, "latent_image");
  if (!r.node || !kWanLatents.count(r.node->type)) {
    auto latent = emit(r, describe(stage) + "'s input 'latent_image'");
    if (!latent.ok()) return latent.error();
    if (!latent->node.empty()) s.inputs["latent"] = *latent;
    return {};
  }
  const ComfyNode& L = *r.node;
  const long long width = integer_or(widget_value(graph_, L, "width"), 1280);
  const long long height = integer_or(widget_value(graph_, L, "height"), 704);
  s.params["width"] = width;
  s.params["height"] = height;
  s.params["frames"] = integer_or(widget_value(graph_, L, "length"), 81);
  carry(L, "width", s, "width");
  carry(L, "height", s, "height");
  carry(L, "length", s, "frames");
  std::string sentence = "its size " + std::to_string(width) + "x" + std::to_string(height) + " and length became " +
                         "Wan Sampler's width, height and frames";
  // ComfyUI scales the start and end images to the video's size.
  const auto image_input = [&](const char* comfy_input, const char* input) -> Result<bool> {
    if (L.type == "EmptyHunyuanLatentVideo" || !L.input(comfy_input) || !L.input(comfy_input)->linked) return false;
    auto image = emit_input(L, comfy_input);
    if (!image.ok()) return image.error();
    if (image->node.empty()) return false;  // a muted or bypassed Load Image gives none
    s.inputs[input] = *image;
    if (engine::Node* load = find(image->node); load && load->type == "LoadImage") {
      load->params["width"] = width;
      load->params["height"] = height;
    }
    return true;
  };
  auto start = image_input("start_image", "image");
  if (!start.ok()) return start.error();
  if (*start) {
    auto vae = emit_input(L, "vae");
    if (!vae.ok()) return vae.error();
    if (!vae->node.empty()) s.inputs["vae"] = *vae;
    sentence += "; its start image is the sampler's image";
    auto end = image_input("end_image", "last_image");
    if (!end.ok()) return end.error();
    if (*end) sentence += " and its end image the sampler's last_image";
  } else if (const ComfyInput* end = L.input("end_image"); end && end->linked) {
    report_.approximate(L, "its end image without a start image has no equivalent (Wan Sampler's last_image goes "
                           "with an image); it was left out.");
  }
  for (const char* vision : {"clip_vision_output", "clip_vision_start_image", "clip_vision_end_image"}) {
    if (const ComfyInput* in = L.input(vision); in && in->linked) {
      report_.approximate(L, std::string("its ") + vision + " (Wan2.1's CLIP image encoder) has no use in Vidgraph; "
                             "it was ignored.");
    }
  }
  if (integer_or(widget_value(graph_, L, "batch_size"), 1) > 1) {
    report_.approximate(L, "batch_size " + widget_value(graph_, L, "batch_size").dump() + " has no equivalent: Wan "
                           "Sampler makes one video per run (use vidgraph-run --sweep for several seeds).");
  }
  report_.map(L, sentence + ".");
  return {};
}

void Converter::set_sampler_steps(engine::Node& s, const ComfyNode& high, const ComfyNode* low) {
  const bool advanced = high.type == "KSamplerAdvanced";
  json seed = widget_value(graph_, high, advanced ? "noise_seed" : "seed");
  constexpr auto kMaxSeed = std::uint64_t(std::numeric_limits<std::int64_t>::max());
  if (seed.is_number_unsigned() && seed.get<std::uint64_t>() > kMaxSeed) {
    seed = seed.get<std::uint64_t>() & kMaxSeed;
    report_.approximate(high, "its seed is above Vidgraph's largest (2^63 - 1); its low 63 bits, " + seed.dump() +
                              ", were used.");
  }
  s.params["seed"] = seed.is_number() ? seed : json(0);
  s.params["steps"] = std::clamp<long long>(integer_or(widget_value(graph_, high, "steps"), 20), 1, 1000);
  s.params["guidance"] = std::clamp(number_or(widget_value(graph_, high, "cfg"), 5.0), 0.0, 30.0);
  carry(high, advanced ? "noise_seed" : "seed", s, "seed");
  carry(high, "steps", s, "steps");
  carry(high, "cfg", s, "guidance");
  const SolverChoice solver = map_solver(text_or(widget_value(graph_, high, "sampler_name"), ""),
                                         text_or(widget_value(graph_, high, "scheduler"), ""));
  s.params["scheduler"] = solver.scheduler;
  for (const std::string& w : solver.warnings) report_.approximate(high, w);
  const double denoise = number_or(widget_value(graph_, high, "denoise"), 1.0);
  if (denoise < 1.0) {
    report_.approximate(high, "denoise " + num(denoise) + " has no equivalent (Wan Sampler starts from "
                              "noise); the full schedule was used.");
  }
  if (advanced) check_stage_range(high, low, s.params["steps"].get<long long>());
  if (low) set_expert_split(s, high, *low);
}

// A KSamplerAdvanced first (or only) stage: Wan Sampler always adds noise and runs from step 0 (to
// the last step when there is no second stage).
void Converter::check_stage_range(const ComfyNode& high, const ComfyNode* low, long long steps) {
  if (text_or(widget_value(graph_, high, "add_noise"), "enable") != "enable") {
    report_.approximate(high, "add_noise disable has no equivalent: Wan Sampler starts from seeded noise.");
  }
  const long long start = integer_or(widget_value(graph_, high, "start_at_step"), 0);
  if (start != 0) {
    report_.approximate(high, "start_at_step " + std::to_string(start) + " has no equivalent; Wan Sampler runs "
                              "from the first step.");
  }
  const long long end = integer_or(widget_value(graph_, high, "end_at_step"), steps);
  if (!low && end < steps) {
    report_.approximate(high, "end_at_step " + std::to_string(end) + " has no equivalent; Wan Sampler runs every "
                              "step.");
  }
}

// Two stages: the low-noise stage's guidance, and the step where the first ends as a boundary at
// the shift set_shift chose; anything the two stages do that one sampler cannot is reported.
void Converter::set_expert_split(engine::Node& s, const ComfyNode& high, const ComfyNode& low) {
  const long long steps = s.params["steps"].get<long long>();
  auto value = [&](const ComfyNode& n, const char* name, long long fallback) {
    return integer_or(widget_value(graph_, n, name), fallback);
  };
  const long long split = std::clamp<long long>(value(high, "end_at_step", steps), 0, steps);
  s.params["guidance_low"] = std::clamp(number_or(widget_value(graph_, low, "cfg"), 1.0), 0.0, 30.0);
  carry(low, "cfg", s, "guidance_low");
  if (value(low, "steps", steps) != steps) {
    report_.approximate(low, "its steps " + std::to_string(value(low, "steps", steps)) + " differ from the " +
                             "high-noise stage's; Wan Sampler runs " + std::to_string(steps) + " steps.");
  }
  if (value(low, "start_at_step", split) != split) {
    report_.approximate(low, "it starts at step " + std::to_string(value(low, "start_at_step", split)) +
                             ", not where the high-noise stage ends (" + std::to_string(split) +
                             "); Wan Sampler switches experts at step " + std::to_string(split) + ".");
  }
  if (value(low, "end_at_step", steps) < steps) {
    report_.approximate(low, "end_at_step " + std::to_string(value(low, "end_at_step", steps)) +
                             " stops early; Wan Sampler runs every step.");
  }
  if (text_or(widget_value(graph_, low, "sampler_name"), "") != text_or(widget_value(graph_, high, "sampler_name"), "")) {
    report_.approximate(low, "its sampler differs from the high-noise stage's; Wan Sampler uses one solver, " +
                             s.params["scheduler"].get<std::string>() + ", for both experts.");
  }
  const double shift = s.params["shift"].get<double>();
  const double boundary = boundary_for_split(static_cast<int>(split), static_cast<int>(steps), shift);
  s.params["expert_boundary"] = boundary;
  if (split <= 0 || split >= steps) {
    report_.approximate(low, "the experts split at step " + std::to_string(split) + " of " + std::to_string(steps) +
                             ", so one expert runs no step; expert_boundary " + num(boundary) + " keeps that.");
    return;
  }
  report_.notes.push_back("The experts switch after step " + std::to_string(split) + " of " + std::to_string(steps) +
                          " as in ComfyUI: Wan Sampler's expert_boundary " + num(boundary) +
                          " lies between those steps' noise levels at shift " + num(shift) + ".");
}

// The shift of the high-noise chain's ModelSamplingSD3 (one shift serves both experts).
void Converter::set_shift(engine::Node& s, const ComfyNode& high, const ComfyNode* low) {
  const ModelChain h = model_chain(graph_, high);
  double shift = 5.0;
  if (h.sampling) {
    shift = number_or(widget_value(graph_, *h.sampling, "shift"), 5.0);
  } else {
    report_.approximate(high, "no ModelSamplingSD3 sets its shift; Wan Sampler's default 5 was used (ComfyUI uses the "
                              "model's own default).");
  }
  if (shift < 0.1 || shift > 20.0) {
    report_.approximate(h.sampling ? *h.sampling : high, "shift " + num(shift) + " is outside Wan Sampler's "
                                                        "0.1..20; the nearest bound was used.");
    shift = std::clamp(shift, 0.1, 20.0);
  }
  s.params["shift"] = shift;
  if (h.sampling) carry(*h.sampling, "shift", s, "shift");
  if (!low) return;
  const ModelChain l = model_chain(graph_, *low);
  const double low_shift = l.sampling ? number_or(widget_value(graph_, *l.sampling, "shift"), shift) : shift;
  if (l.sampling && low_shift != shift) {
    report_.approximate(*l.sampling, "shift " + num(low_shift) + " differs from the high-noise expert's; "
                                     "Wan Sampler uses one shift, " + num(shift) + ".");
  }
}

}  // namespace vidgraph::comfy
