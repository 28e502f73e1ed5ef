// Implements comfy_walk.h.
#include "interop/comfy_walk.h"

namespace vidgraph::comfy {

namespace {

constexpr int kMaxHops = 4096;  // a longer way is a cycle of reroutes

bool same_type(const std::string& a, const std::string& b) { return a == b || a == "*" || b == "*"; }

// The input a bypassed node passes to its output `slot` (ComfyUI: the first input of that type).
const ComfyInput* bypass_route(const ComfyNode& node, int slot) {
  const std::string type = slot < static_cast<int>(node.output_types.size()) ? node.output_types[slot] : "";
  for (const ComfyInput& in : node.inputs) {
    if (in.linked && !type.empty() && same_type(in.type, type)) return &in;
  }
  return nullptr;
}

}  // namespace

Reached follow(const ComfyGraph& graph, const ComfySource& start) {
  Reached r;
  ComfySource at = start;
  for (int hop = 0; hop < kMaxHops; ++hop) {
    const ComfyNode* n = graph.find(at.node);
    if (!n) return r;
    if (n->mode == kModeMuted) {
      r.muted = n;
      return r;
    }
    const ComfyInput* next = nullptr;
    if (n->type == "Reroute") {
      next = n->inputs.empty() || !n->inputs.front().linked ? nullptr : &n->inputs.front();
    } else if (n->type == kSwitchType && n->mode != kModeBypassed) {
      const ComfyInput* chosen = n->input(switch_on(graph, *n) ? "on_true" : "on_false");
      next = chosen && chosen->linked ? chosen : nullptr;
      if (!next) r.blocked = n;
    } else if (n->mode == kModeBypassed) {
      next = bypass_route(*n, at.slot);
      if (!next) r.blocked = n;
    } else {
      r.node = n;
      r.slot = at.slot;
      return r;
    }
    if (!next) return r;
    at = next->source;
  }
  return r;
}

Reached follow(const ComfyGraph& graph, const ComfyNode& node, const std::string& input) {
  const ComfyInput* in = node.input(input);
  if (!in || !in->linked) return {};
  return follow(graph, in->source);
}

nlohmann::json widget_value(const ComfyGraph& graph, const ComfyNode& node, const std::string& name) {
  // As in ComfyUI, a linked widget input wins over the widget's own (stale) value.
  const Reached from = follow(graph, node, name);
  if (from.node && from.node->type.rfind("Primitive", 0) == 0) {
    if (from.node->values.contains("value")) return from.node->values["value"];
    if (from.node->raw_widgets.is_array() && !from.node->raw_widgets.empty()) return from.node->raw_widgets[0];
  }
  return node.values.contains(name) ? node.values[name] : nlohmann::json();
}

bool switch_on(const ComfyGraph& graph, const ComfyNode& node) {
  const nlohmann::json v = widget_value(graph, node, "switch");
  return v.is_boolean() ? v.get<bool>() : v.is_number() && v.get<double>() != 0.0;
}

}  // namespace vidgraph::comfy
