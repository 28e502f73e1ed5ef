// Implements attention_params_bridge.h.
#include "nodes/attention_params_bridge.h"

#include <algorithm>
#include <stdexcept>

namespace vidgraph::nodes {
namespace {

using plugin::ParamDescriptor;
using plugin::ParamType;
using plugin::ParamValue;

// The descriptor's default as workflow JSON.
nlohmann::json json_default(const ParamDescriptor& d) {
  const ParamValue& v = d.default_value;
  switch (d.type) {
    case ParamType::Bool: return std::holds_alternative<bool>(v) && std::get<bool>(v);
    case ParamType::Int: return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : int64_t(0);
    case ParamType::Float:
      if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
      return std::holds_alternative<double>(v) ? std::get<double>(v) : 0.0;
    case ParamType::String:
    case ParamType::IntList: return plugin::param_value_to_string(v);
  }
  return nullptr;
}

// A workflow value as the descriptor's type; throws std::invalid_argument when it is not one.
ParamValue to_param_value(const ParamDescriptor& d, const nlohmann::json& value) {
  switch (d.type) {
    case ParamType::Bool:
      if (value.is_boolean()) return value.get<bool>();
      break;
    case ParamType::Int:
      if (value.is_number_integer()) return value.get<int64_t>();
      break;
    case ParamType::Float:
      if (value.is_number()) return value.get<double>();
      break;
    case ParamType::String:
      if (value.is_string()) return value.get<std::string>();
      break;
    case ParamType::IntList:
      if (value.is_string()) return plugin::param_value_from_string(d, value.get<std::string>());
      break;
  }
  throw std::invalid_argument("must be a " + std::string(plugin::param_type_name(d.type)) + ", got " +
                              std::string(value.type_name()));
}

}  // namespace

engine::ParamSpec spec_like(const ParamDescriptor& d, const std::string& key, const nlohmann::json& def,
                            const std::string& description) {
  engine::ParamSpec s;
  switch (d.type) {
    case ParamType::Bool: s = engine::ParamSpec::boolean(key, def.get<bool>(), description); break;
    case ParamType::Int:
      s = engine::ParamSpec::integer(key, def.get<int64_t>(), d.min, d.max, description);
      s.max_exclusive = d.max_exclusive;
      break;
    case ParamType::Float:
      s = engine::ParamSpec::real(key, def.get<double>(), d.min, d.max, description);
      s.max_exclusive = d.max_exclusive;
      break;
    case ParamType::String:
      s = d.choices.empty() ? engine::ParamSpec::string(key, def, description)
                            : engine::ParamSpec::enumeration(key, d.choices, def, description);
      break;
    case ParamType::IntList:
      s = engine::ParamSpec::string(key, def, description);
      break;
  }
  if (d.type == ParamType::IntList || (d.type == ParamType::String && d.choices.empty())) {
    // What the kind cannot say (a list's length and element range): the plugin API's own check.
    s.rule = [d, key](const nlohmann::json& value) -> std::string {
      try {
        plugin::check_param_value(d, to_param_value(d, value));
        return {};
      } catch (const std::invalid_argument& e) {
        return "param '" + key + "': " + e.what();
      }
    };
  }
  return s;
}

namespace {

// The workflow spec of `d` under `key`, for the methods listed in `users`.
engine::ParamSpec spec_of(const ParamDescriptor& d, const std::string& key, const std::string& users) {
  return spec_like(d, key, json_default(d), d.description + " (used by " + users + ")");
}

}  // namespace

AttentionParamSchema::AttentionParamSchema(std::vector<plugin::MethodInfo> methods,
                                           const std::vector<std::string>& reserved,
                                           const std::vector<std::string>& node_supplied)
    : methods_(std::move(methods)) {
  struct Shared {
    const ParamDescriptor* first;
    std::string key, users;
  };
  std::vector<Shared> shared;
  auto taken = [&](const std::string& key) {
    if (std::find(reserved.begin(), reserved.end(), key) != reserved.end()) return true;
    return std::any_of(shared.begin(), shared.end(), [&](const Shared& s) { return s.key == key; });
  };
  for (const plugin::MethodInfo& m : methods_) {
    for (const ParamDescriptor& d : m.params) {
      if (std::find(node_supplied.begin(), node_supplied.end(), d.name) != node_supplied.end()) continue;
      auto same = std::find_if(shared.begin(), shared.end(), [&](const Shared& s) {
        return s.first->name == d.name && plugin::same_param_rules(*s.first, d);
      });
      if (same == shared.end()) {
        const std::string key = taken(d.name) ? m.name + "_" + d.name : d.name;
        shared.push_back({&d, key, m.name});
        same = shared.end() - 1;
      } else {
        same->users += ", " + m.name;
      }
      entries_.push_back({m.name, d.name, same->key});
    }
  }
  for (const Shared& s : shared) specs_.push_back(spec_of(*s.first, s.key, s.users));
}

std::vector<std::string> AttentionParamSchema::method_names() const {
  std::vector<std::string> names;
  for (const auto& m : methods_) names.push_back(m.name);
  return names;
}

const plugin::MethodInfo* AttentionParamSchema::find_method(const std::string& name) const {
  return plugin::find_method(methods_, name);
}

const ParamDescriptor* AttentionParamSchema::descriptor(const std::string& name) const {
  for (const plugin::MethodInfo& m : methods_)
    for (const ParamDescriptor& d : m.params)
      if (d.name == name) return &d;
  return nullptr;
}

std::string AttentionParamSchema::key_of(const std::string& method, const std::string& param) const {
  for (const Entry& e : entries_)
    if (e.method == method && e.param == param) return e.key;
  return {};
}

engine::Result<plugin::ParamMap> AttentionParamSchema::params_for(const plugin::MethodInfo& method,
                                                                  const nlohmann::json& node_params) const {
  plugin::ParamMap out;
  for (const ParamDescriptor& d : method.params) {
    const std::string key = key_of(method.name, d.name);
    const auto it = node_params.find(key);
    if (key.empty() || it == node_params.end() || it->is_null()) continue;  // the plugin's default applies
    try {
      out[d.name] = to_param_value(d, *it);
    } catch (const std::invalid_argument& e) {
      return engine::make_error("param '" + key + "': " + e.what());
    }
  }
  return out;
}

engine::Result<plugin::ParamMap> AttentionParamSchema::params_for(const std::string& method,
                                                                  const nlohmann::json& node_params) const {
  const plugin::MethodInfo* info = find_method(method);
  if (info == nullptr) return engine::make_error("The attention plugin has no method '" + method + "'.");
  return params_for(*info, node_params);
}

}  // namespace vidgraph::nodes
