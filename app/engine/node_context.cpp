// NodeContext: a node's view of its inputs, params and run, and its channels back to the engine.
#include "node_context.h"

#include <stdexcept>

namespace vidgraph::engine {

NodeContext::NodeContext(std::string node_id, std::string node_type, ValueMap inputs, nlohmann::json params,
                         RunOptions options, Hooks hooks)
    : node_id_(std::move(node_id)),
      node_type_(std::move(node_type)),
      inputs_(std::move(inputs)),
      params_(params.is_object() ? std::move(params) : nlohmann::json::object()),
      options_(std::move(options)),
      hooks_(std::move(hooks)) {}

bool NodeContext::has_input(const std::string& port) const { return input(port) != nullptr; }

const Value* NodeContext::input(const std::string& port) const {
  auto it = inputs_.find(port);
  if (it == inputs_.end() || it->second.empty()) return nullptr;
  return &it->second;
}

const Value& NodeContext::require_input(const std::string& port) const {
  const Value* v = input(port);
  if (!v) throw std::runtime_error("input '" + port + "' is not connected; connect it and run again");
  return *v;
}

void NodeContext::throw_wrong_input_type(const std::string& port) const {
  const Value& v = require_input(port);
  throw std::runtime_error("input '" + port + "' holds a " + v.type +
                           " value of an unexpected C++ type; this is a bug in the node that produced it");
}

const nlohmann::json& NodeContext::require_param(const std::string& name) const {
  auto it = params_.find(name);
  if (it == params_.end() || it->is_null()) throw std::runtime_error("param '" + name + "' is missing");
  return *it;
}

std::int64_t NodeContext::param_int(const std::string& name) const {
  const auto& v = require_param(name);
  if (!v.is_number_integer()) throw std::runtime_error("param '" + name + "' must be an integer");
  return v.get<std::int64_t>();
}

double NodeContext::param_float(const std::string& name) const {
  const auto& v = require_param(name);
  if (!v.is_number()) throw std::runtime_error("param '" + name + "' must be a number");
  return v.get<double>();
}

bool NodeContext::param_bool(const std::string& name) const {
  const auto& v = require_param(name);
  if (!v.is_boolean()) throw std::runtime_error("param '" + name + "' must be true or false");
  return v.get<bool>();
}

std::string NodeContext::param_string(const std::string& name) const {
  const auto& v = require_param(name);
  if (!v.is_string()) throw std::runtime_error("param '" + name + "' must be a string");
  return v.get<std::string>();
}

std::string NodeContext::param_path(const std::string& name) const { return resolve_path(param_string(name)); }

void NodeContext::progress(std::int64_t value, std::int64_t max, const std::string& text,
                           const ProgressMetrics& metrics) const {
  if (hooks_.progress) hooks_.progress(value, max, text, metrics);
}

bool NodeContext::cancelled() const { return hooks_.cancelled && hooks_.cancelled(); }

void NodeContext::log(LogLevel level, const std::string& line) const {
  if (hooks_.log) hooks_.log(level, line);
}

void NodeContext::wrote(const std::string& path) const {
  if (hooks_.wrote) hooks_.wrote(path);
}

void NodeContext::emit_preview(const Value& preview) const {
  if (hooks_.preview) hooks_.preview(preview);
}

void NodeContext::emit_step_preview(const Value& preview, std::int64_t step, std::int64_t steps) const {
  if (hooks_.step_preview) {
    hooks_.step_preview(preview, step, steps);
  } else if (hooks_.preview) {
    hooks_.preview(preview);
  }
}

}  // namespace vidgraph::engine
