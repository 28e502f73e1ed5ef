// `--set NODE.PARAM=VALUE` parsing and application (see overrides.h).
#include "overrides.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "subgraph.h"
#include "validation.h"

namespace vidgraph::engine {

using nlohmann::json;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<json> parse_integer(const ParamSpec& spec, const std::string& raw) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(raw.c_str(), &end, 10);
  if (raw.empty() || end != raw.c_str() + raw.size() || errno == ERANGE) {
    return make_error("param '" + spec.name + "' takes an integer, got '" + raw + "'");
  }
  return json(static_cast<std::int64_t>(v));
}

Result<json> parse_real(const ParamSpec& spec, const std::string& raw) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(raw.c_str(), &end);
  if (raw.empty() || end != raw.c_str() + raw.size() || errno == ERANGE || !std::isfinite(v)) {
    return make_error("param '" + spec.name + "' takes a number, got '" + raw + "'");
  }
  return json(v);
}

Result<json> parse_bool(const ParamSpec& spec, const std::string& raw) {
  const std::string v = lower(raw);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return json(true);
  if (v == "false" || v == "0" || v == "no" || v == "off") return json(false);
  return make_error("param '" + spec.name + "' takes true or false, got '" + raw + "'");
}

Result<json> parse_raw(const ParamSpec& spec, const std::string& raw) {
  switch (spec.kind) {
    case ParamKind::Int:
    case ParamKind::Seed: return parse_integer(spec, raw);
    case ParamKind::Float: return parse_real(spec, raw);
    case ParamKind::Bool: return parse_bool(spec, raw);
    default: break;
  }
  // Strings: a JSON string literal ("...") is unquoted, anything else is taken as is.
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
    try {
      json j = json::parse(raw);
      if (j.is_string()) return j;
    } catch (const json::exception&) {
    }
  }
  return json(raw);
}

}  // namespace

Result<ParamOverride> parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) {
    return make_error("--set '" + text + "' needs the form NODE.PARAM=VALUE");
  }
  const std::string lhs = text.substr(0, eq);
  const auto dot = lhs.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == lhs.size()) {
    return make_error("--set '" + text + "' needs the form NODE.PARAM=VALUE (node id, a dot, the param name)");
  }
  ParamOverride o{lhs.substr(0, dot), lhs.substr(dot + 1), text.substr(eq + 1)};
  if (!is_valid_node_path(o.node_id)) {
    return make_error("--set '" + text + "': '" + o.node_id + "' is not a valid node id");
  }
  return o;
}

Result<json> parse_param_value(const ParamSpec& spec, const std::string& raw) {
  auto value = parse_raw(spec, raw);
  if (!value.ok()) return value;
  if (auto s = spec.check(value.value()); !s) return s.error();
  return value;
}

// An exposed param of a subgraph instance: checked against the inner param it sets (through nested
// instances), stored on the instance.
Status apply_to_instance(GraphDocument& doc, const Registry& registry, const Node& instance, const ParamOverride& o,
                         const std::string& text) {
  auto target = exposed_param_target(doc, instance, o.param);
  if (!target.ok()) {
    return Error{o.node_id, "--set " + text + ": " + target.error().message + "; set an inner node's param as " +
                                o.node_id + "/NODE.PARAM"};
  }
  const NodeType* type = registry.find(target->type);
  const ParamSpec* spec = type ? type->find_param(target->param) : nullptr;
  if (!spec) return Error{o.node_id, "--set " + text + ": the param it exposes is not one its node type knows"};
  auto value = parse_param_value(*spec, o.value);
  if (!value.ok()) return Error{o.node_id, "--set " + text + ": " + value.error().message};
  auto set = doc.set_param(o.node_id, o.param, std::move(value.value()));
  if (!set.ok()) return set.error();
  return {};
}

Status apply_overrides(GraphDocument& doc, const Registry& registry, const std::vector<std::string>& overrides) {
  for (const auto& text : overrides) {
    auto o = parse_override(text);
    if (!o.ok()) return o.error();
    const Node* node = doc.find_node(o->node_id);
    if (!node) return Error{o->node_id, "--set " + text + ": there is no node '" + o->node_id + "'"};
    if (node->type == kSubgraphType) {
      if (auto s = apply_to_instance(doc, registry, *node, *o, text); !s.ok()) return s.error();
      continue;
    }
    const NodeType* type = registry.find(node->type);
    if (!type) {
      return Error{o->node_id, "--set " + text + ": node type '" + node->type + "' is unknown, so its params are too"};
    }
    const ParamSpec* spec = type->find_param(o->param);
    if (!spec) {
      std::string names;
      for (const auto& p : type->params) names += (names.empty() ? "" : ", ") + p.name;
      return Error{o->node_id, "--set " + text + ": " + type->name + " has no param '" + o->param +
                                   "' (its params: " + (names.empty() ? "none" : names) + ")"};
    }
    auto value = parse_param_value(*spec, o->value);
    if (!value.ok()) return Error{o->node_id, "--set " + text + ": " + value.error().message};
    if (auto s = doc.set_param(o->node_id, o->param, std::move(value.value())); !s.ok()) return s.error();
  }
  return {};
}

Status upgrade_and_apply_overrides(GraphDocument& doc, const Registry& registry,
                                   const std::vector<std::string>& overrides) {
  if (auto upgraded = upgrade_node_types(doc, registry); !upgraded.ok()) return upgraded.error();
  if (!has_subgraph_instances(doc)) return apply_overrides(doc, registry, overrides);
  // The instances' exposed params first, then the expansion, then inner params by path (a/b.PARAM).
  std::vector<std::string> outer, inner;
  for (const auto& text : overrides) {
    auto o = parse_override(text);
    if (!o.ok()) return o.error();
    (o->node_id.find('/') == std::string::npos ? outer : inner).push_back(text);
  }
  if (auto s = apply_overrides(doc, registry, outer); !s.ok()) return s.error();
  auto expanded = expand_subgraphs(doc);
  if (!expanded.ok()) return expanded.error();
  doc = std::move(expanded.value());
  if (auto upgraded = upgrade_node_types(doc, registry); !upgraded.ok()) return upgraded.error();
  return apply_overrides(doc, registry, inner);
}

}  // namespace vidgraph::engine
