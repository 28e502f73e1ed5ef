// Shared fixtures of the node suites (tst_nodes: registration, descriptors, latent files, preview and
// media nodes; tst_nodes_model: model files, Load Wan Model and the sampler): a recorder of a node's
// progress, previews and cancellation, a NodeContext built without an engine, and a registered type.
//
// Contract: header-only; make_context() runs the node as "n1" with the type's defaults merged into
// `params`; find_type() aborts the test program when a built-in type is missing (a registration bug).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <QtCore/QtGlobal>

#include "engine/node_context.h"
#include "engine/registry.h"

namespace vidgraph::nodes_test {

struct Recorder {
  std::vector<std::pair<std::int64_t, std::int64_t>> progress;
  std::vector<std::string> progress_text;
  std::vector<std::string> logs;
  std::vector<engine::Value> previews;
  bool cancel = false;
};

inline engine::NodeContext make_context(const engine::NodeType& type, const nlohmann::json& params,
                                        engine::ValueMap inputs, engine::RunOptions options,
                                        Recorder* recorder) {
  engine::NodeContext::Hooks hooks;
  hooks.progress = [recorder](std::int64_t v, std::int64_t m, const std::string& text, const engine::ProgressMetrics&) {
    recorder->progress.emplace_back(v, m);
    recorder->progress_text.push_back(text);
  };
  hooks.cancelled = [recorder] { return recorder->cancel; };
  hooks.preview = [recorder](const engine::Value& v) { recorder->previews.push_back(v); };
  hooks.log = [recorder](engine::LogLevel, const std::string& line) { recorder->logs.push_back(line); };
  return engine::NodeContext("n1", type.name, std::move(inputs), type.params_with_defaults(params),
                             std::move(options), hooks);
}

inline const engine::NodeType& find_type(const engine::Registry& registry, const char* name) {
  const engine::NodeType* t = registry.find(name);
  if (!t) qFatal("node type %s not registered", name);
  return *t;
}

}  // namespace vidgraph::nodes_test
