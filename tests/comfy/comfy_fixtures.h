// ComfyUI workflows written by the tests in the structure of Comfy-Org's Wan2.2 templates (UI and
// API formats), built here node by node: no template file is copied.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace comfy_test {

using nlohmann::json;

// A UI-format graph: nodes with typed inputs and outputs, links filled in on both ends.
struct UiGraph {
  json nodes = json::array();
  json links = json::array();
  int next_link = 1;

  json& node(int id, const std::string& type, json widgets, std::vector<std::pair<std::string, std::string>> inputs,
             std::vector<std::string> outputs, int mode = 0) {
    json in = json::array();
    for (const auto& [name, t] : inputs) in.push_back({{"name", name}, {"type", t}, {"link", nullptr}});
    json out = json::array();
    for (const auto& t : outputs) out.push_back({{"name", t}, {"type", t}, {"links", json::array()}});
    nodes.push_back({{"id", id}, {"type", type}, {"pos", {id * 10, id * 5}}, {"mode", mode}, {"inputs", in},
                     {"outputs", out}, {"widgets_values", widgets}, {"properties", json::object()}});
    return nodes.back();
  }

  json& at(int id) {
    for (json& n : nodes) {
      if (n["id"] == id) return n;
    }
    throw std::runtime_error("no node " + std::to_string(id));
  }

  void link(int from, int slot, int to, const std::string& input) {
    json& target = at(to);
    int index = 0;
    for (json& in : target["inputs"]) {
      if (in["name"] == input) {
        in["link"] = next_link;
        const std::string type = at(from)["outputs"][slot]["type"];
        at(from)["outputs"][slot]["links"].push_back(next_link);
        links.push_back({next_link++, from, slot, to, index, type});
        return;
      }
      ++index;
    }
    throw std::runtime_error("no input " + input);
  }

  json file() const {
    return {{"last_node_id", 300}, {"last_link_id", next_link}, {"nodes", nodes}, {"links", links},
            {"groups", json::array()}, {"config", json::object()}, {"extra", json::object()}, {"version", 0.4}};
  }
};

inline const char* kPositive = "a red fox runs through fresh snow at dawn";
inline const char* kNegative = "blurry, static";

// The loaders, prompts and sampler tail every Wan graph shares; returns nothing, fills `g`.
inline void add_prompts(UiGraph& g, int clip) {
  g.node(6, "CLIPTextEncode", {kPositive}, {{"clip", "CLIP"}}, {"CONDITIONING"});
  g.node(7, "CLIPTextEncode", {kNegative}, {{"clip", "CLIP"}}, {"CONDITIONING"});
  g.link(clip, 0, 6, "clip");
  g.link(clip, 0, 7, "clip");
}

inline void add_video_out(UiGraph& g, int samples_from, int vae, double fps, int base = 8, int mode = 0) {
  g.node(base, "VAEDecode", json::array(), {{"samples", "LATENT"}, {"vae", "VAE"}}, {"IMAGE"}, mode);
  g.node(base + 52, "CreateVideo", {fps}, {{"images", "IMAGE"}, {"audio", "AUDIO"}}, {"VIDEO"}, mode);
  g.node(base + 53, "SaveVideo", {"video/ComfyUI", "auto", "auto"}, {{"video", "VIDEO"}}, {}, mode);
  g.link(samples_from, 0, base, "samples");
  g.link(vae, 0, base, "vae");
  g.link(base, 0, base + 52, "images");
  g.link(base + 52, 0, base + 53, "video");
}

// `g`'s UI file with the nodes `inner` moved into a subgraph definition (`id`, `name`) and one
// instance node `instance` in their place, as ComfyUI's editor makes one: each outside output read
// inside becomes an instance input (boundary node -10), each inner output read outside an instance
// output (boundary node -20). `promoted` becomes the instance's properties.proxyWidgets, `values`
// its widgets_values.
inline json wrap_in_subgraph(const UiGraph& g, const std::set<int>& inner, int instance, const std::string& id,
                             const std::string& name, const json& promoted = json::array(),
                             const json& values = json::array()) {
  json file = g.file();
  json outer_nodes = json::array(), body_nodes = json::array(), outer_links = json::array(), body_links = json::array();
  for (const json& n : file["nodes"]) (inner.count(n["id"].get<int>()) ? body_nodes : outer_nodes).push_back(n);
  json inst = {{"id", instance}, {"type", id}, {"mode", 0}, {"pos", {0, 0}}, {"inputs", json::array()},
               {"outputs", json::array()}, {"widgets_values", values},
               {"properties", {{"proxyWidgets", promoted}}}};
  json def_inputs = json::array(), def_outputs = json::array();
  std::map<std::pair<int, int>, int> input_of, output_of;  // (node, slot) → boundary slot
  int next = 1000;
  auto set_input_link = [&](json& nodes, int node, int slot, int link) {
    for (json& n : nodes) {
      if (n["id"] == node) n["inputs"][slot]["link"] = link;
    }
  };
  for (const json& l : file["links"]) {  // [id, from, from_slot, to, to_slot, type]
    const int from = l[1], from_slot = l[2], to = l[3], to_slot = l[4];
    const bool from_in = inner.count(from) > 0, to_in = inner.count(to) > 0;
    if (from_in == to_in) {
      (from_in ? body_links : outer_links).push_back(l);
      continue;
    }
    const std::string type = l[5];
    if (to_in) {  // outside → inside: an instance input
      auto [it, fresh] = input_of.emplace(std::make_pair(from, from_slot), int(def_inputs.size()));
      if (fresh) {
        const std::string port = "in" + std::to_string(it->second);
        def_inputs.push_back({{"name", port}, {"type", type}});
        inst["inputs"].push_back({{"name", port}, {"type", type}, {"link", l[0]}});
        outer_links.push_back({l[0], from, from_slot, instance, it->second, type});
      }
      body_links.push_back({next, -10, it->second, to, to_slot, type});
      set_input_link(body_nodes, to, to_slot, next++);
    } else {  // inside → outside: an instance output
      auto [it, fresh] = output_of.emplace(std::make_pair(from, from_slot), int(def_outputs.size()));
      if (fresh) {
        def_outputs.push_back({{"name", type}, {"type", type}});
        inst["outputs"].push_back({{"name", type}, {"type", type}, {"links", json::array()}});
        body_links.push_back({next++, from, from_slot, -20, it->second, type});
      }
      outer_links.push_back({l[0], instance, it->second, to, to_slot, type});
    }
  }
  outer_nodes.push_back(inst);
  file["nodes"] = outer_nodes;
  file["links"] = outer_links;
  file["definitions"]["subgraphs"] = json::array({{{"id", id}, {"name", name}, {"inputs", def_inputs},
                                                   {"outputs", def_outputs}, {"nodes", body_nodes}, {"links", body_links}}});
  return file;
}

// Wan2.2 TI2V-5B as the template lays it out; `image_mode` 0 makes it image-to-video, 4 (bypassed
// Load Image, as the template ships) text-to-video.
inline UiGraph ti2v_5b_ui(int image_mode = 4) {
  UiGraph g;
  g.node(37, "UNETLoader", {"wan2.2_ti2v_5B_fp16.safetensors", "default"}, {}, {"MODEL"});
  g.node(38, "CLIPLoader", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"}, {}, {"CLIP"});
  g.node(39, "VAELoader", {"wan2.2_vae.safetensors"}, {}, {"VAE"});
  g.node(48, "ModelSamplingSD3", {8}, {{"model", "MODEL"}}, {"MODEL"});
  g.link(37, 0, 48, "model");
  add_prompts(g, 38);
  g.node(56, "LoadImage", {"example.png", "image"}, {}, {"IMAGE", "MASK"}, image_mode);
  g.node(55, "Wan22ImageToVideoLatent", {1280, 704, 121, 1}, {{"vae", "VAE"}, {"start_image", "IMAGE"}}, {"LATENT"});
  g.link(39, 0, 55, "vae");
  g.link(56, 0, 55, "start_image");
  g.node(3, "KSampler", {42, "randomize", 30, 5, "uni_pc", "simple", 1},
         {{"model", "MODEL"}, {"positive", "CONDITIONING"}, {"negative", "CONDITIONING"}, {"latent_image", "LATENT"}},
         {"LATENT"});
  g.link(48, 0, 3, "model");
  g.link(6, 0, 3, "positive");
  g.link(7, 0, 3, "negative");
  g.link(55, 0, 3, "latent_image");
  add_video_out(g, 3, 39, 24);
  g.node(59, "MarkdownNote", {"Put the model files in ComfyUI/models."}, {}, {});
  return g;
}

// The same graph in the API format (text-to-video: the bypassed Load Image is not exported).
inline json ti2v_5b_api() {
  return {
      {"37", {{"class_type", "UNETLoader"}, {"inputs", {{"unet_name", "wan2.2_ti2v_5B_fp16.safetensors"}, {"weight_dtype", "default"}}}}},
      {"38", {{"class_type", "CLIPLoader"}, {"inputs", {{"clip_name", "umt5_xxl_fp8_e4m3fn_scaled.safetensors"}, {"type", "wan"}, {"device", "default"}}}}},
      {"39", {{"class_type", "VAELoader"}, {"inputs", {{"vae_name", "wan2.2_vae.safetensors"}}}}},
      {"48", {{"class_type", "ModelSamplingSD3"}, {"inputs", {{"shift", 8}, {"model", {"37", 0}}}}}},
      {"6", {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", kPositive}, {"clip", {"38", 0}}}}, {"_meta", {{"title", "Positive"}}}}},
      {"7", {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", kNegative}, {"clip", {"38", 0}}}}}},
      {"55", {{"class_type", "Wan22ImageToVideoLatent"}, {"inputs", {{"width", 1280}, {"height", 704}, {"length", 121}, {"batch_size", 1}, {"vae", {"39", 0}}}}}},
      {"3", {{"class_type", "KSampler"}, {"inputs", {{"seed", 42}, {"steps", 30}, {"cfg", 5}, {"sampler_name", "uni_pc"}, {"scheduler", "simple"}, {"denoise", 1}, {"model", {"48", 0}}, {"positive", {"6", 0}}, {"negative", {"7", 0}}, {"latent_image", {"55", 0}}}}}},
      {"8", {{"class_type", "VAEDecode"}, {"inputs", {{"samples", {"3", 0}}, {"vae", {"39", 0}}}}}},
      {"60", {{"class_type", "CreateVideo"}, {"inputs", {{"fps", 24}, {"images", {"8", 0}}}}}},
      {"61", {{"class_type", "SaveVideo"}, {"inputs", {{"filename_prefix", "video/ComfyUI"}, {"format", "auto"}, {"codec", "auto"}, {"video", {"60", 0}}}}}},
  };
}

// Wan2.2-A14B T2V with the template's two groups: the 4-step Lightning LoRA group (`lightning_mode`)
// and the 20-step group without LoRAs (`plain_mode`); 0 runs a group, 4 bypasses it.
inline UiGraph a14b_t2v_ui(int lightning_mode, int plain_mode, int lora_mode = 0) {
  UiGraph g;
  g.node(37, "UNETLoader", {"wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "default"}, {}, {"MODEL"});
  g.node(56, "UNETLoader", {"wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors", "default"}, {}, {"MODEL"});
  g.node(38, "CLIPLoader", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"}, {}, {"CLIP"});
  g.node(39, "VAELoader", {"wan_2.1_vae.safetensors"}, {}, {"VAE"});
  add_prompts(g, 38);
  g.node(59, "EmptyHunyuanLatentVideo", {1280, 720, 81, 1}, {}, {"LATENT"});
  const std::vector<std::pair<std::string, std::string>> ksa_inputs = {
      {"model", "MODEL"}, {"positive", "CONDITIONING"}, {"negative", "CONDITIONING"}, {"latent_image", "LATENT"}};
  // Lightning group: LoRA per expert, shift 5, 4 steps split at 2, cfg 1.
  const int lm = lightning_mode;
  g.node(101, "LoraLoaderModelOnly", {"wan2.2_t2v_lightx2v_4steps_lora_v1.1_high_noise.safetensors", 1.0},
         {{"model", "MODEL"}}, {"MODEL"}, lm ? lm : lora_mode);
  g.node(102, "LoraLoaderModelOnly", {"wan2.2_t2v_lightx2v_4steps_lora_v1.1_low_noise.safetensors", 1.0},
         {{"model", "MODEL"}}, {"MODEL"}, lm ? lm : lora_mode);
  g.node(54, "ModelSamplingSD3", {5.0}, {{"model", "MODEL"}}, {"MODEL"}, lm);
  g.node(55, "ModelSamplingSD3", {5.0}, {{"model", "MODEL"}}, {"MODEL"}, lm);
  g.node(57, "KSamplerAdvanced", {"enable", 42, "fixed", 4, 1, "euler", "simple", 0, 2, "enable"}, ksa_inputs,
         {"LATENT"}, lm);
  g.node(58, "KSamplerAdvanced", {"disable", 0, "fixed", 4, 1, "euler", "simple", 2, 10000, "disable"}, ksa_inputs,
         {"LATENT"}, lm);
  g.link(37, 0, 101, "model");
  g.link(56, 0, 102, "model");
  g.link(101, 0, 54, "model");
  g.link(102, 0, 55, "model");
  g.link(54, 0, 57, "model");
  g.link(55, 0, 58, "model");
  for (int k : {57, 58}) {
    g.link(6, 0, k, "positive");
    g.link(7, 0, k, "negative");
  }
  g.link(59, 0, 57, "latent_image");
  g.link(57, 0, 58, "latent_image");
  add_video_out(g, 58, 39, 16, 8, lm);
  // The plain group: shift 8, 20 steps split at 10, cfg 3.5 / 3.5.
  const int pm = plain_mode;
  g.node(201, "ModelSamplingSD3", {8.0}, {{"model", "MODEL"}}, {"MODEL"}, pm);
  g.node(202, "ModelSamplingSD3", {8.0}, {{"model", "MODEL"}}, {"MODEL"}, pm);
  g.node(203, "KSamplerAdvanced", {"enable", 7, "randomize", 20, 3.5, "euler", "simple", 0, 10, "enable"}, ksa_inputs,
         {"LATENT"}, pm);
  g.node(204, "KSamplerAdvanced", {"disable", 0, "fixed", 20, 3.5, "euler", "simple", 10, 10000, "disable"}, ksa_inputs,
         {"LATENT"}, pm);
  g.link(37, 0, 201, "model");
  g.link(56, 0, 202, "model");
  g.link(201, 0, 203, "model");
  g.link(202, 0, 204, "model");
  for (int k : {203, 204}) {
    g.link(6, 0, k, "positive");
    g.link(7, 0, k, "negative");
  }
  g.link(59, 0, 203, "latent_image");
  g.link(203, 0, 204, "latent_image");
  add_video_out(g, 204, 39, 16, 208, pm);
  return g;
}

// Wan2.2-A14B I2V: WanImageToVideo passes the prompts on and makes the latent from the start image;
// two KSamplerAdvanced stages (20 steps split at 10), written by SaveWEBM.
inline UiGraph a14b_i2v_ui() {
  UiGraph g;
  g.node(37, "UNETLoader", {"wan2.2_i2v_high_noise_14B_fp16.safetensors", "default"}, {}, {"MODEL"});
  g.node(56, "UNETLoader", {"wan2.2_i2v_low_noise_14B_fp16.safetensors", "default"}, {}, {"MODEL"});
  g.node(38, "CLIPLoader", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"}, {}, {"CLIP"});
  g.node(39, "VAELoader", {"wan_2.1_vae.safetensors"}, {}, {"VAE"});
  add_prompts(g, 38);
  g.node(62, "LoadImage", {"portrait.png", "image"}, {}, {"IMAGE", "MASK"});
  g.node(50, "WanImageToVideo", {832, 480, 81, 1},
         {{"positive", "CONDITIONING"}, {"negative", "CONDITIONING"}, {"vae", "VAE"},
          {"clip_vision_output", "CLIP_VISION_OUTPUT"}, {"start_image", "IMAGE"}},
         {"CONDITIONING", "CONDITIONING", "LATENT"});
  g.link(6, 0, 50, "positive");
  g.link(7, 0, 50, "negative");
  g.link(39, 0, 50, "vae");
  g.link(62, 0, 50, "start_image");
  g.node(54, "ModelSamplingSD3", {8.0}, {{"model", "MODEL"}}, {"MODEL"});
  g.node(55, "ModelSamplingSD3", {8.0}, {{"model", "MODEL"}}, {"MODEL"});
  g.link(37, 0, 54, "model");
  g.link(56, 0, 55, "model");
  const std::vector<std::pair<std::string, std::string>> ksa_inputs = {
      {"model", "MODEL"}, {"positive", "CONDITIONING"}, {"negative", "CONDITIONING"}, {"latent_image", "LATENT"}};
  g.node(57, "KSamplerAdvanced", {"enable", 11, "randomize", 20, 3.5, "euler", "simple", 0, 10, "enable"}, ksa_inputs,
         {"LATENT"});
  g.node(58, "KSamplerAdvanced", {"disable", 0, "fixed", 20, 3.5, "euler", "simple", 10, 10000, "disable"}, ksa_inputs,
         {"LATENT"});
  g.link(54, 0, 57, "model");
  g.link(55, 0, 58, "model");
  for (int k : {57, 58}) {
    g.link(50, 0, k, "positive");
    g.link(50, 1, k, "negative");
  }
  g.link(50, 2, 57, "latent_image");
  g.link(57, 0, 58, "latent_image");
  g.node(8, "VAEDecode", json::array(), {{"samples", "LATENT"}, {"vae", "VAE"}}, {"IMAGE"});
  g.link(58, 0, 8, "samples");
  g.link(39, 0, 8, "vae");
  g.node(63, "SaveWEBM", {"wan/i2v", "vp9", 16, 30}, {{"images", "IMAGE"}}, {});
  g.link(8, 0, 63, "images");
  return g;
}

}  // namespace comfy_test
