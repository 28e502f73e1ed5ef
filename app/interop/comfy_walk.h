// Following links through a ComfyUI graph as ComfyUI runs it: Reroute nodes pass their input on;
// a bypassed node (mode 4) passes, for each output, its first linked input of the same type; a
// muted node (mode 2) produces nothing; a Switch (ComfySwitchNode) passes on_true or on_false as its
// `switch` says. Widget values may come from primitive nodes linked to a widget's input.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "interop/comfy_graph.h"

namespace vidgraph::comfy {

inline constexpr const char* kSwitchType = "ComfySwitchNode";

struct Reached {
  const ComfyNode* node = nullptr;  // the node that produces the value; null when none does
  int slot = 0;
  const ComfyNode* muted = nullptr;    // set when the way ended at a muted node
  const ComfyNode* blocked = nullptr;  // set when a bypassed node had no input of the output's type
};

// The node whose output really feeds `input` of `node` (null in Reached when it is not linked).
Reached follow(const ComfyGraph& graph, const ComfyNode& node, const std::string& input);
Reached follow(const ComfyGraph& graph, const ComfySource& source);

// The widget `name` of `node`: the value of a primitive node (Primitive*) linked to the widget's
// input, else the node's own value; null when neither.
nlohmann::json widget_value(const ComfyGraph& graph, const ComfyNode& node, const std::string& name);

// Whether a Switch passes on_true: its `switch` widget (or the primitive linked to it) is true.
bool switch_on(const ComfyGraph& graph, const ComfyNode& node);

}  // namespace vidgraph::comfy
