// Converter's driver (comfy_converter.h): the family check, the video outputs, Export Video and
// VAE Decode, and the account of the nodes no output needed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "interop/comfy_converter.h"
#include "engine/listing.h"

namespace vidgraph::comfy {

using engine::InputLink;
using engine::Result;
using nlohmann::json;

namespace {

const std::set<std::string> kVideoSinks = {"SaveVideo", "SaveWEBM", "SaveAnimatedWEBP"};
const std::set<std::string> kOtherFamily = {
    "CheckpointLoaderSimple", "CheckpointLoader", "unCLIPCheckpointLoader", "ImageOnlyCheckpointLoader",
    "EmptyLatentImage", "EmptySD3LatentImage", "DualCLIPLoader", "TripleCLIPLoader"};
// Classes the mapping knows; one no output needs is left out without being "unsupported".
const std::set<std::string> kMapped = {
    "UNETLoader", "UnetLoaderGGUF", "CLIPLoader", "CLIPLoaderGGUF", "VAELoader", "LoraLoaderModelOnly", "LoraLoader",
    "CLIPTextEncode", "ModelSamplingSD3", "KSampler", "KSamplerAdvanced", "Wan22ImageToVideoLatent", "WanImageToVideo",
    "WanFirstLastFrameToVideo", "WanFunInpaintToVideo", "EmptyHunyuanLatentVideo", "LoadImage", "VAEDecode",
    "CreateVideo", "SaveVideo", "SaveWEBM", "SaveAnimatedWEBP"};

bool followed_through(const std::string& type) { return type == "Reroute" || type.rfind("Primitive", 0) == 0; }

// A ComfyUI filename_prefix ("video/ComfyUI") as one file name in the output folder.
std::string file_stem(const std::string& prefix) {
  std::string stem;
  for (char c : prefix) {
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    stem += plain ? c : (c == '/' || c == '\\') ? '-' : '_';
  }
  while (!stem.empty() && (stem.front() == '.' || stem.front() == '-')) stem.erase(stem.begin());
  return stem.empty() ? "ComfyUI" : stem;
}

}  // namespace

std::string describe(const ComfyNode& node) { return "ComfyUI node " + node.id + " (" + node.type + ")"; }

double number_or(const json& v, double fallback) { return v.is_number() ? v.get<double>() : fallback; }

long long integer_or(const json& v, long long fallback) {
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number()) return static_cast<long long>(std::llround(v.get<double>()));
  return fallback;
}

std::string text_or(const json& v, const std::string& fallback) { return v.is_string() ? v.get<std::string>() : fallback; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

engine::Status Converter::run() {
  if (auto s = refuse_other_family(); !s) return s;
  if (auto s = emit_outputs(); !s) return s;
  note_model_files();
  account_leftovers();
  return {};
}

engine::Status Converter::refuse_other_family() const {
  // Checkpoint loaders, 2-D latents, multi-encoder loaders and a text encoder of another type are
  // other families' (EmptyHunyuanLatentVideo alone is not: Wan's text-to-video templates use it).
  std::vector<std::string> foreign;
  for (const ComfyNode& n : graph_.nodes) {
    if (!n.runs()) continue;
    const std::string clip_type = text_or(n.values.value("type", json()), "wan");
    const bool other_clip = (n.type == "CLIPLoader" || n.type == "CLIPLoaderGGUF") && clip_type != "wan";
    if (kOtherFamily.count(n.type) || other_clip) foreign.push_back(describe(n));
  }
  if (foreign.empty()) return {};
  return engine::make_error("this ComfyUI workflow is not a Wan video workflow (" + engine::comma_list(foreign) +
                            " belong to another model family); Vidgraph runs Wan2.2 / Wan2.1 video workflows "
                            "(text or image to video with Wan's diffusion model, umT5 text encoder and VAE), so "
                            "it cannot be imported.");
}

engine::Status Converter::emit_outputs() {
  bool any = false;
  for (const ComfyNode& n : graph_.nodes) {
    if (!n.runs() || !kVideoSinks.count(n.type)) continue;
    auto out = emit_export(n);
    if (!out.ok()) return out.error();
    any = true;
  }
  if (any) return {};
  for (const ComfyNode& n : graph_.nodes) {  // no video output: keep the decoded video at least
    if (!n.runs() || n.type != "VAEDecode") continue;
    auto out = emit(Reached{&n, 0}, "the graph");
    if (!out.ok()) return out.error();
    report_.notes.push_back("The workflow has no video output (SaveVideo, SaveWEBM or SaveAnimatedWEBP) that runs; "
                            "the decoded video is not written: add an Export Video node after '" + out->node + "'.");
    return {};
  }
  return engine::make_error("the ComfyUI workflow has no video output that runs (SaveVideo, SaveWEBM or "
                            "SaveAnimatedWEBP) and no VAEDecode; there is nothing to import. Unmute its output "
                            "node in ComfyUI and save again.");
}

Result<InputLink> Converter::emit_export(const ComfyNode& sink) {
  double fps = number_or(widget_value(graph_, sink, "fps"), 24.0);
  Reached frames = follow(graph_, sink, sink.type == "SaveVideo" ? "video" : "images");
  if (sink.type == "SaveVideo" && frames.node && frames.node->type == "CreateVideo") {
    const ComfyNode& create = *frames.node;
    fps = number_or(widget_value(graph_, create, "fps"), 24.0);
    const ComfyInput* audio = create.input("audio");
    if (audio && audio->linked) {
      report_.approximate(create, "its audio is not written: Export Video writes the video only.");
    } else {
      report_.map(create, "its fps " + num(fps) + " became Export Video's and VAE Decode's fps.");
    }
    frames = follow(graph_, create, "images");
  }
  auto video = emit(frames, describe(sink));
  if (!video.ok()) return video.error();
  if (video->node.empty()) {
    return engine::make_error(describe(sink) + " has no frames connected; connect it in ComfyUI or remove it.");
  }
  engine::Node out = make_node("export", "ExportVideo", &sink);
  out.inputs["video"] = *video;
  const bool webm = sink.type != "SaveVideo";
  const std::string stem = file_stem(text_or(widget_value(graph_, sink, "filename_prefix"), "ComfyUI"));
  out.params = {{"filename", "{output}/" + stem + (webm ? ".webm" : ".mp4")},
                {"format", webm ? "webm" : "mp4"},
                {"fps", fps},
                {"naming", "increment"}};
  if (sink.type == "SaveWEBM") out.params["crf"] = std::clamp<long long>(integer_or(sink.values.value("crf", json()), 32), 0, 63);
  if (engine::Node* decode = find(video->node); decode && decode->type == "VAEDecode") decode->params["fps"] = fps;
  const std::string codec = text_or(sink.values.value("codec", json()), "vp9");
  if (sink.type == "SaveAnimatedWEBP") {
    report_.approximate(sink, "Vidgraph writes no animated WebP; a WebM (VP9) video '" + stem +
                                  ".webm' is written instead (lossless, quality and method have no equivalent).");
  } else if (sink.type == "SaveWEBM" && codec != "vp9") {
    report_.approximate(sink, "codec " + codec + " has no equivalent; the WebM is written with VP9.");
  } else {
    report_.map(sink, "became Export Video '" + out.id + "' writing {output}/" + stem + (webm ? ".webm" : ".mp4") +
                          " (numbered when the file exists).");
  }
  return commit(std::move(out), "path");
}

Result<InputLink> Converter::emit_decode(const ComfyNode& node) {
  auto latent = emit_input(node, "samples");
  if (!latent.ok()) return latent.error();
  auto vae = emit_input(node, "vae");
  if (!vae.ok()) return vae.error();
  engine::Node decode = make_node("decode", "VAEDecode", &node);
  if (!latent->node.empty()) decode.inputs["latent"] = *latent;
  if (!vae->node.empty()) decode.inputs["vae"] = *vae;
  report_.map(node, "became VAE Decode '" + decode.id + "'.");
  return commit(std::move(decode), "video");
}

void Converter::account_leftovers() {
  std::string skipped;
  for (const ComfyNode& n : graph_.nodes) {
    if (report_.has(n.id)) continue;
    if (n.type == kSwitchType && n.runs()) {
      report_.map(n, std::string("its switch is ") + (switch_on(graph_, n) ? "on: what feeds on_true" : "off: what feeds on_false") +
                         " is what the nodes after it read.");
      continue;
    }
    if (followed_through(n.type)) continue;
    if (n.type == "Note" || n.type == "MarkdownNote") {
      extra_["notes"].push_back({{"id", n.id}, {"title", n.title}, {"text", n.values.value("text", json(""))}});
      report_.unsupport(n, "a Vidgraph document has no comments yet, so the note is not shown; its text is kept "
                           "in the document's \"comfyui\" entry.");
    } else if (!n.runs()) {
      skipped += (skipped.empty() ? "" : ", ") + n.id + " (" + n.type + ")";
    } else if (kMapped.count(n.type)) {
      report_.notes.push_back(describe(n) + " feeds no video output, so it was left out.");
    } else {
      extra_["unused_nodes"].push_back({{"id", n.id}, {"type", n.type}, {"values", n.values}, {"widgets_values", n.raw_widgets}});
      report_.unsupport(n, "Vidgraph has no equivalent; no video output needs it, so it was left out of the graph "
                           "(kept in the document's \"comfyui\" entry).");
    }
  }
  if (!skipped.empty()) {
    report_.notes.push_back("Muted or bypassed nodes that no output needs were left out, as ComfyUI does not run "
                            "them: " + skipped + ".");
  }
}

engine::Node Converter::make_node(const std::string& base_id, const std::string& type, const ComfyNode* from) {
  engine::Node n;
  std::string id = base_id;
  for (int i = 2; reserved_.count(id); ++i) id = base_id + "_" + std::to_string(i);
  reserved_.insert(id);
  n.id = id;
  n.type = type;
  if (from && from->pos.is_array() && from->pos.size() >= 2) editor_["nodes"][id] = {{"pos", from->pos}};
  if (from) n.extra["comfyui_node"] = from->id;
  return n;
}

void Converter::carry(const ComfyNode& from, const std::string& widget, const engine::Node& to,
                      const std::string& param) {
  carried_[{from.id, widget}] = engine::InnerParam{to.id, param};
}

InputLink Converter::commit(engine::Node node, const std::string& output) {
  InputLink link{node.id, output};
  nodes_.push_back(std::move(node));
  return link;
}

engine::Node* Converter::find(const std::string& id) {
  for (engine::Node& n : nodes_) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

}  // namespace vidgraph::comfy
