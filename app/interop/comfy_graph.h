// A ComfyUI workflow read into one neutral form, whichever of its two file formats it came in:
//   UI format  (the editor's save): {"nodes": [...], "links": [[id, from, slot, to, slot, type]], ...,
//              "definitions": {"subgraphs": [...]}}; widget values by position (`widgets_values`).
//   API format (the queue's prompt): {"<id>": {"class_type": ..., "inputs": {name: value | [id, slot]}}}.
// Contract: every node has its ComfyUI id (as a string; a flattened subgraph's inner node
// "<instance>-<inner>", the instance listed in `subgraphs`), class type, mode (0 runs, 2 muted, 4 bypassed; API files hold only nodes
// that run), widget values by name (comfy_widgets.h names UI widgets by position) and linked inputs
// by name. Reroute nodes are kept as nodes; comfy_walk.h follows them. No Qt, no LibTorch.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/result.h"

namespace vidgraph::comfy {

enum class ComfyFormat { None, Ui, Api };

// ComfyUI's node modes (LiteGraph): 0 always, 2 never (muted), 4 bypass.
inline constexpr int kModeMuted = 2;
inline constexpr int kModeBypassed = 4;

struct ComfySource {
  std::string node;  // the producing node's id
  int slot = 0;      // its output slot
};

struct ComfyInput {
  std::string name;
  std::string type;  // value type ("MODEL", ...); empty when the file does not say (API format)
  bool linked = false;
  ComfySource source;
};

struct ComfyNode {
  std::string id;
  std::string type;   // class type ("KSampler")
  std::string title;  // the editor's title, when set
  int mode = 0;
  nlohmann::json values = nlohmann::json::object();  // widget values by name
  nlohmann::json raw_widgets;                        // UI format: widgets_values as found
  std::vector<ComfyInput> inputs;                    // declared order (UI) or file order (API)
  std::vector<std::string> output_types;             // by slot; empty in the API format
  nlohmann::json pos;                                // UI format: [x, y]
  nlohmann::json proxy_widgets;  // a subgraph instance's promoted widgets: [[inner id, widget], ...]

  const ComfyInput* input(const std::string& name) const;
  bool runs() const { return mode != kModeMuted && mode != kModeBypassed; }
};

// A subgraph instance the UI reader flattened: its inner nodes are named "<id>-<inner id>".
struct ComfySubgraph {
  std::string id;            // the instance's id ("<outer>-<id>" when nested)
  std::string name;          // its definition's name
  nlohmann::json promoted;   // the widgets it shows: [[inner id, widget], ...] (properties.proxyWidgets)
};

struct ComfyGraph {
  ComfyFormat format = ComfyFormat::None;
  std::vector<ComfyNode> nodes;
  std::vector<ComfySubgraph> subgraphs;  // innermost first
  std::vector<std::string> notes;        // what reading did to the graph, as sentences

  const ComfyNode* find(const std::string& id) const;
  // The nodes that read `id`'s output `slot`, with the input name each reads it into.
  std::vector<std::pair<const ComfyNode*, std::string>> readers(const std::string& id, int slot) const;
};

// The ComfyUI node a promoted `widget` of node `id` sets: `id` itself, or, when `id` is a flattened
// instance listed in `subgraphs` (so no node), the node that instance's own promotion of `widget`
// names, followed down through nested instances.
std::string promoted_widget_node(const std::vector<ComfySubgraph>& subgraphs, std::string id, const std::string& widget);

// What `root` is: a UI-format graph (top-level "nodes" and "links" arrays, not a Vidgraph file), an
// API-format prompt (an object whose every value has "class_type" and "inputs"), or neither.
ComfyFormat comfy_format_of(const nlohmann::json& root);

// Field values as ComfyUI writes them, for both readers. A node or link id (a number or a string)
// as text; an integer (a slot, a mode) that is a JSON integer within int, else nlohmann's
// type_error, which the import reports as a value ComfyUI never writes (a float such as 1e40 must
// never reach a conversion to int).
std::string comfy_id(const nlohmann::json& v);
int comfy_int(const nlohmann::json& v);
// comfy_int of obj[key], or `fallback` when obj has no such key.
int comfy_int_field(const nlohmann::json& obj, const char* key, int fallback);

// Readers; `source` names the file in error sentences.
engine::Result<ComfyGraph> read_ui_graph(const nlohmann::json& root, const std::string& source);
engine::Result<ComfyGraph> read_api_graph(const nlohmann::json& root, const std::string& source);

}  // namespace vidgraph::comfy
