// The runs of a --sweep, parsed and validated before any starts (see sweep_plan.h).
#include "sweep_plan.h"

#include <algorithm>

#include "engine/overrides.h"
#include "engine/subgraph.h"
#include "engine/validation.h"

namespace vidgraph::cli {

using engine::Error;
using engine::make_error;
using nlohmann::json;

namespace {

std::string run_folder(int index, std::size_t count) {
  const std::size_t width = std::to_string(count).size();
  std::string number = std::to_string(index);
  if (number.size() < width) number.insert(0, width - number.size(), '0');
  return "run-" + number;
}

// The keys given with --set ("node.param"); malformed ones were refused when they were applied.
std::vector<std::string> set_keys(const std::vector<std::string>& sets) {
  std::vector<std::string> keys;
  for (const auto& text : sets) {
    auto o = engine::parse_override(text);
    if (o.ok()) keys.push_back(o->node_id + "." + o->param);
  }
  return keys;
}

// The product of the axes' sizes, or 0 when it exceeds kMaxSweepRuns.
std::size_t run_count(const std::vector<SweepAxis>& axes) {
  std::size_t count = 1;
  for (const auto& axis : axes) {
    count *= axis.values.size();
    if (count > kMaxSweepRuns) return 0;
  }
  return count;
}

// The run with `index` (1-based): axis values picked like the digits of a counter, last axis fastest.
SweepRun make_run(const engine::GraphDocument& doc, const std::vector<SweepAxis>& axes, std::size_t index,
                  std::size_t count) {
  SweepRun run;
  run.index = static_cast<int>(index);
  run.folder = run_folder(run.index, count);
  run.document = doc;
  std::vector<std::size_t> pick(axes.size());
  std::size_t rest = index - 1;
  for (std::size_t a = axes.size(); a-- > 0;) {
    pick[a] = rest % axes[a].values.size();
    rest /= axes[a].values.size();
  }
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const json& value = axes[a].values[pick[a]];
    run.settings.emplace_back(axes[a].key(), value);
    run.settings_text += (a == 0 ? "" : " ") + axes[a].key() + "=" + axes[a].texts[pick[a]];
    (void)run.document.set_param(axes[a].node_id, axes[a].param, value);
  }
  return run;
}

}  // namespace

json SweepRun::settings_json() const {
  json j = json::object();
  for (const auto& [key, value] : settings) j[key] = value;
  return j;
}

engine::Result<std::vector<std::string>> split_sweep_values(const std::string& list) {
  std::vector<std::string> values(1);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (c == '\\') {
      if (i + 1 == list.size() || (list[i + 1] != ',' && list[i + 1] != '\\')) {
        return make_error("'\\' must be followed by ',' (a comma inside a value) or '\\' (a backslash)");
      }
      values.back() += list[++i];
    } else if (c == ',') {
      values.emplace_back();
    } else {
      values.back() += c;
    }
  }
  if (values.size() == 1 && values[0].empty()) return make_error("gives no values; list them after '=', e.g. =1,2");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].empty()) {
      return make_error("value " + std::to_string(i + 1) + " is empty; write \"\" for an empty text");
    }
  }
  return values;
}

engine::Result<SweepAxis> parse_sweep_axis(const std::string& text, const engine::GraphDocument& doc,
                                           const engine::Registry& registry) {
  const std::string what = "--sweep " + text + ": ";
  const auto eq = text.find('=');
  const auto dot = text.substr(0, eq).find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == eq) {
    return make_error("--sweep '" + text + "' needs the form NODE.PARAM=VALUE1,VALUE2,...");
  }
  SweepAxis axis;
  axis.node_id = text.substr(0, dot);
  axis.param = text.substr(dot + 1, eq - dot - 1);
  if (!engine::is_valid_node_path(axis.node_id)) {  // a subgraph's inner node by path: out/export
    return make_error(what + "'" + axis.node_id + "' is not a valid node id");
  }
  const engine::Node* node = doc.find_node(axis.node_id);
  if (!node) return Error{axis.node_id, what + "there is no node '" + axis.node_id + "'"};
  const engine::NodeType* type = registry.find(node->type);
  if (!type) return Error{axis.node_id, what + "node type '" + node->type + "' is unknown, so its params are too"};
  const engine::ParamSpec* spec = type->find_param(axis.param);
  if (!spec) {
    std::string names;
    for (const auto& p : type->params) names += (names.empty() ? "" : ", ") + p.name;
    return Error{axis.node_id, what + type->name + " has no param '" + axis.param + "' (its params: " +
                                   (names.empty() ? "none" : names) + ")"};
  }
  auto raw = split_sweep_values(text.substr(eq + 1));
  if (!raw.ok()) return Error{axis.node_id, what + raw.error().message};
  for (const std::string& item : *raw) {
    auto value = engine::parse_param_value(*spec, item);
    if (!value.ok()) return Error{axis.node_id, what + value.error().message};
    if (std::find(axis.values.begin(), axis.values.end(), *value) != axis.values.end()) {
      return Error{axis.node_id, what + "value '" + item + "' is given twice; every run must differ"};
    }
    axis.values.push_back(std::move(*value));
    axis.texts.push_back(item);
  }
  return axis;
}

engine::Result<std::vector<std::string>> sweeps_on_inner_params(const engine::GraphDocument& as_loaded,
                                                                 const std::vector<std::string>& sweeps) {
  std::vector<std::string> out;
  for (const std::string& text : sweeps) {
    const auto eq = text.find('=');
    const auto dot = text.substr(0, eq).find('.');
    const engine::Node* node = dot == std::string::npos ? nullptr : as_loaded.find_node(text.substr(0, dot));
    if (!node || node->type != engine::kSubgraphType || eq == std::string::npos) {
      out.push_back(text);  // parse_sweep_axis judges it
      continue;
    }
    auto target = engine::exposed_param_target(as_loaded, *node, text.substr(dot + 1, eq - dot - 1));
    if (!target.ok()) {
      return Error{node->id, "--sweep " + text + ": " + target.error().message + "; sweep an inner node's param as " +
                                 node->id + "/NODE.PARAM"};
    }
    out.push_back(target->path + "." + target->param + text.substr(eq));
  }
  return out;
}

SweepPlan plan_sweep(const engine::GraphDocument& doc, const engine::Registry& registry,
                     const std::vector<std::string>& sweeps, const std::vector<std::string>& sets,
                     const std::vector<std::string>& targets) {
  SweepPlan plan;
  const std::vector<std::string> fixed = set_keys(sets);
  for (const auto& text : sweeps) {
    auto axis = parse_sweep_axis(text, doc, registry);
    if (!axis.ok()) {
      plan.errors.push_back(axis.error());
      continue;
    }
    const std::string key = axis->key();
    auto same_key = [&key](const SweepAxis& a) { return a.key() == key; };
    if (std::any_of(plan.axes.begin(), plan.axes.end(), same_key)) {
      plan.errors.push_back({axis->node_id, "--sweep " + text + ": " + key + " is swept twice; list all its values in one --sweep"});
    } else if (std::find(fixed.begin(), fixed.end(), key) != fixed.end()) {
      plan.errors.push_back({axis->node_id, "--sweep " + text + ": " + key + " is also given with --set; drop one of them"});
    } else {
      plan.axes.push_back(std::move(*axis));
    }
  }
  if (!plan.ok()) return plan;
  const std::size_t count = run_count(plan.axes);
  if (count == 0) {
    plan.errors.push_back(make_error("the --sweep options make more than " + std::to_string(kMaxSweepRuns) +
                                     " runs; sweep fewer values or split the sweep"));
    return plan;
  }
  std::size_t invalid = 0;
  for (std::size_t i = 1; i <= count; ++i) {
    SweepRun run = make_run(doc, plan.axes, i, count);
    engine::ValidationReport report = engine::validate_document(run.document, registry, targets);
    if (i == 1) plan.warnings = report.warnings;
    if (!report.ok() && invalid++ == 0) {
      for (auto& e : report.errors) {
        plan.errors.push_back({e.node_id, "run " + std::to_string(i) + " (" + run.settings_text + "): " + e.message});
      }
    }
    plan.runs.push_back(std::move(run));
  }
  if (invalid > 1) {
    plan.errors.push_back(make_error(std::to_string(invalid) + " of " + std::to_string(count) +
                                     " runs are invalid (the errors of the first are shown)"));
  }
  return plan;
}

}  // namespace vidgraph::cli
