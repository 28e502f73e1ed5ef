// The names of ComfyUI widgets by position, for the node classes the import maps: the UI format
// stores `widgets_values` as a list in the node's widget order, the API format by name.
// Contract: a seed widget is followed in the list by the editor's "control after generate" choice
// (fixed / increment / decrement / randomize), which is skipped when present. Classes not in the
// table keep their list as it is (ComfyNode::raw_widgets) and get no named values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vidgraph::comfy {

// Widget values by name for `type` from its UI-format `widgets_values` (an array; an object, as
// some custom nodes write, is returned as it is). Empty object for classes the table lacks.
nlohmann::json name_widget_values(const std::string& type, const nlohmann::json& widgets_values);

}  // namespace vidgraph::comfy
