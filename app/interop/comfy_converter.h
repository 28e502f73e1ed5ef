// Internal: the Wan mapping from a ComfyGraph to Vidgraph nodes (comfy_import.h is the way in).
//
// The conversion starts at the video outputs (SaveVideo, SaveWEBM, SaveAnimatedWEBP) that run and
// walks upstream, emitting Vidgraph nodes as it meets what they need: loaders fold into one Load
// Wan Model, ModelSamplingSD3 and the latent nodes into the sampler's params, the CLIPTextEncode
// pair into Prompt + Encode Text, a KSamplerAdvanced pair over one step range into one two-expert
// Wan Sampler. A node of a class without a mapping that the outputs need is kept as an unknown
// Vidgraph node ("ComfyUI:<class>"), so validation names it; one they do not need is left out of
// the graph (kept in the document's "comfyui" entry). Each emitted ComfyUI node gets one entry in
// the report. It works on the flattened graph; comfy_subgraphs.h regroups its output.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "interop/comfy_graph.h"
#include "interop/comfy_report.h"
#include "interop/comfy_walk.h"
#include "engine/document.h"
#include "engine/result.h"
#include "engine/subgraph.h"

namespace vidgraph::comfy {

// Which Vidgraph param holds a ComfyUI widget's value unchanged: (ComfyUI node id, widget) → param.
using CarriedWidgets = std::map<std::pair<std::string, std::string>, engine::InnerParam>;

class Converter {
 public:
  Converter(const ComfyGraph& graph, ImportReport& report) : graph_(graph), report_(report) {}

  // Emits the whole graph; the nodes, the editor layout and the "comfyui" extra are then read.
  engine::Status run();
  std::vector<engine::Node> nodes() const { return nodes_; }
  nlohmann::json editor() const { return editor_; }
  nlohmann::json extra() const { return extra_; }
  const CarriedWidgets& carried() const { return carried_; }

  // ---- shared by the parts (comfy_convert_*.cpp)
  // The Vidgraph output that stands for `reached` (a ComfyUI output), emitting what it needs;
  // `role` ("high", "low" or "") names the LoRAs of a two-expert chain. An unlinked input, a muted
  // source or a bypassed one with nothing to pass gives a link with an empty node (and a note).
  engine::Result<engine::InputLink> emit(const Reached& reached, const std::string& needed_by,
                                         const std::string& role = "");
  engine::Result<engine::InputLink> emit_input(const ComfyNode& node, const std::string& input,
                                               const std::string& role = "");

 private:
  engine::Status refuse_other_family() const;
  engine::Status emit_outputs();
  engine::Result<engine::InputLink> emit_export(const ComfyNode& sink);
  engine::Result<engine::InputLink> emit_decode(const ComfyNode& decode);
  engine::Result<engine::InputLink> emit_sampler(const ComfyNode& sampler);
  engine::Status emit_conditioning(engine::Node& sampler, const ComfyNode& first_stage);
  engine::Status emit_latent(engine::Node& sampler, const ComfyNode& first_stage);
  engine::Result<engine::InputLink> emit_loader(const ComfyNode& loader, int slot);
  engine::Result<engine::InputLink> emit_lora(const ComfyNode& lora, int slot, const std::string& role);
  engine::Result<engine::InputLink> emit_image(const ComfyNode& image);
  engine::Result<engine::InputLink> emit_prompt(const ComfyNode& positive, const ComfyNode* negative);
  engine::Result<engine::InputLink> emit_unknown(const ComfyNode& node, int slot);
  void set_shift(engine::Node& sampler, const ComfyNode& high, const ComfyNode* low);
  void set_sampler_steps(engine::Node& sampler, const ComfyNode& high, const ComfyNode* low);
  void check_stage_range(const ComfyNode& high, const ComfyNode* low, long long steps);
  void set_expert_split(engine::Node& sampler, const ComfyNode& high, const ComfyNode& low);
  // Records that `to`'s `param` holds `from`'s widget `widget` as it is (comfy_subgraphs.h exposes
  // the params of promoted widgets through it).
  void carry(const ComfyNode& from, const std::string& widget, const engine::Node& to, const std::string& param);
  void note_model_files();
  void account_leftovers();

  // Nodes are built apart and committed once their inputs are emitted, so the document lists
  // every node after the nodes it reads. make_node reserves a unique id at once.
  engine::Node make_node(const std::string& base_id, const std::string& type, const ComfyNode* from);
  engine::InputLink commit(engine::Node node, const std::string& output);
  std::string model_node();  // the id of the one Load Wan Model, committed on first use
  engine::Node* find(const std::string& id);

  const ComfyGraph& graph_;
  ImportReport& report_;
  std::vector<engine::Node> nodes_;
  std::set<std::string> reserved_;  // ids handed out by make_node
  nlohmann::json editor_ = nlohmann::json::object();
  nlohmann::json extra_ = nlohmann::json::object();
  std::map<std::string, std::map<int, engine::InputLink>> emitted_;  // ComfyUI id → slot → Vidgraph output
  std::map<std::string, std::string> expert_;  // UNET loader id → "model" or "low_noise_model"
  std::set<std::string> in_progress_;          // guards against cycles in a broken file
  std::map<std::string, std::string> unknown_;  // ComfyUI id → its kept unknown Vidgraph node
  std::string model_id_;                        // the Load Wan Model, once made
  const ComfyNode* low_loader_ = nullptr;       // the low-noise expert's loader, for the file note
  nlohmann::json files_ = nlohmann::json::object();  // ComfyUI's model file names, by Load Wan Model param
  CarriedWidgets carried_;
};

// "ComfyUI node 5 (VAEDecode)".
std::string describe(const ComfyNode& node);
// A JSON number as a double / an integer (default when absent or not a number).
double number_or(const nlohmann::json& v, double fallback);
long long integer_or(const nlohmann::json& v, long long fallback);
std::string text_or(const nlohmann::json& v, const std::string& fallback);
// A number for a sentence: up to 4 significant digits ("0.8854", "24", "1e+20").
std::string num(double v);

}  // namespace vidgraph::comfy
