// Implements the queries of comfy_graph.h and the recognition of the two ComfyUI file formats.
#include "interop/comfy_graph.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace vidgraph::comfy {

const ComfyInput* ComfyNode::input(const std::string& name) const {
  for (const ComfyInput& in : inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

const ComfyNode* ComfyGraph::find(const std::string& id) const {
  for (const ComfyNode& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::vector<std::pair<const ComfyNode*, std::string>> ComfyGraph::readers(const std::string& id, int slot) const {
  std::vector<std::pair<const ComfyNode*, std::string>> out;
  for (const ComfyNode& n : nodes) {
    for (const ComfyInput& in : n.inputs) {
      if (in.linked && in.source.node == id && in.source.slot == slot) out.emplace_back(&n, in.name);
    }
  }
  return out;
}

ComfyFormat comfy_format_of(const nlohmann::json& root) {
  if (!root.is_object() || root.empty()) return ComfyFormat::None;
  if (root.contains("format")) return ComfyFormat::None;  // a Vidgraph workflow (or something else)
  const auto nodes = root.find("nodes");
  const auto links = root.find("links");
  if (nodes != root.end() && links != root.end() && nodes->is_array() && links->is_array()) return ComfyFormat::Ui;
  for (const auto& [key, value] : root.items()) {
    if (!value.is_object() || !value.contains("class_type") || !value["class_type"].is_string() ||
        !value.contains("inputs") || !value["inputs"].is_object()) {
      return ComfyFormat::None;
    }
  }
  return ComfyFormat::Api;
}

std::string comfy_id(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string promoted_widget_node(const std::vector<ComfySubgraph>& subgraphs, std::string id, const std::string& widget) {
  for (std::size_t hop = 0; hop < subgraphs.size(); ++hop) {  // each hop enters another instance
    const auto sub = std::find_if(subgraphs.begin(), subgraphs.end(), [&](const ComfySubgraph& s) { return s.id == id; });
    if (sub == subgraphs.end() || !sub->promoted.is_array()) return id;
    const auto p = std::find_if(sub->promoted.begin(), sub->promoted.end(), [&](const nlohmann::json& e) {
      return e.is_array() && e.size() >= 2 && e[1] == widget && (e[0].is_string() || e[0].is_number_integer());
    });
    if (p == sub->promoted.end()) return id;
    id += "-" + comfy_id((*p)[0]);
  }
  return id;
}

int comfy_int(const nlohmann::json& v) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<int>::max())) {
    return static_cast<int>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const std::int64_t n = v.get<std::int64_t>();
    if (n >= std::numeric_limits<int>::min() && n <= std::numeric_limits<int>::max()) return static_cast<int>(n);
  }
  throw nlohmann::json::type_error::create(302, "an integer was expected, but it is " + v.dump(), nullptr);
}

int comfy_int_field(const nlohmann::json& obj, const char* key, int fallback) {
  const auto it = obj.find(key);
  return it == obj.end() ? fallback : comfy_int(*it);
}

}  // namespace vidgraph::comfy
