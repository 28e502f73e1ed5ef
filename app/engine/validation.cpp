// Validation before a run (see validation.h).
#include "validation.h"

#include <filesystem>
#include <set>

#include "bypass.h"
#include "plan.h"

namespace vidgraph::engine {

using nlohmann::json;

namespace {

void check_inputs(const GraphDocument& doc, const Registry& registry, const Node& n, const NodeType& type,
                  ValidationReport& report) {
  for (const PortSpec& port : type.inputs) {
    if (!port.optional && !n.bypass && !n.inputs.count(port.name)) {
      report.errors.push_back(Error{n.id, "required input '" + port.name + "' (" + port.type +
                                              ") is not connected; connect an output of type " + port.type});
    }
  }
  for (const auto& [port_name, link] : n.inputs) {
    const PortSpec* in = type.find_input(port_name);
    if (!in) {
      report.errors.push_back(Error{n.id, "input '" + port_name + "' does not exist on " + type.name +
                                              "; remove that link"});
      continue;
    }
    const Node* src = doc.find_node(link.node);
    if (!src) continue;  // structural invariant: cannot happen in a built document
    const NodeType* src_type = registry.find(src->type);
    if (!src_type) continue;  // reported as an unknown type on the source node
    const PortSpec* out = src_type->find_output(link.output);
    if (!out) {
      report.errors.push_back(Error{n.id, "input '" + port_name + "' is linked to output '" + link.output +
                                              "' of '" + src->id + "', but " + src_type->name +
                                              " has no such output; reconnect it"});
    } else if (!value_types_compatible(out->type, in->type)) {
      report.errors.push_back(Error{n.id, "input '" + port_name + "' takes " + in->type + " but '" + src->id +
                                              "." + link.output + "' gives " + out->type +
                                              "; connect an output of type " + in->type});
    }
  }
}

// "{output}/…" must name something inside the output folder: not the folder itself, not a way out
// of it through "..". Returns "" or the problem.
std::string check_output_pattern(const ParamSpec& spec, const json& value) {
  const std::string tag = "{output}";
  if (!value.is_string()) return {};
  const std::string& text = value.get_ref<const std::string&>();
  if (text.compare(0, tag.size(), tag) != 0) return {};
  const std::filesystem::path rest =
      std::filesystem::path(text.substr(tag.size())).relative_path().lexically_normal();
  if (rest.empty() || rest == ".") {
    return "param '" + spec.name + "' names the output folder itself ('" + text +
           "'); give a name inside it, such as {output}/name";
  }
  if (*rest.begin() == "..") {
    return "param '" + spec.name + "' ('" + text + "') leaves the output folder through '..'; name "
           "a place inside {output}/, or give an absolute path";
  }
  return {};
}

void check_params(const Node& n, const NodeType& type, ValidationReport& report) {
  for (const ParamSpec& spec : type.params) {
    auto it = n.params.find(spec.name);
    if (it == n.params.end() || it->is_null()) continue;  // default applies
    if (auto s = spec.check(*it); !s) {
      report.errors.push_back(Error{n.id, s.error().message});
    } else if (spec.kind == ParamKind::FilePath || spec.kind == ParamKind::FolderPath) {
      if (std::string problem = check_output_pattern(spec, *it); !problem.empty()) {
        report.errors.push_back(Error{n.id, std::move(problem)});
      }
    }
  }
  for (const auto& [name, value] : n.params.items()) {
    if (!type.find_param(name)) {
      report.warnings.push_back(Error{n.id, "param '" + name + "' is not a param of " + type.name +
                                                " and is ignored (it is kept in the file)"});
    }
  }
}

// A bypassed node: every output another node reads needs an input to pass through.
void check_bypass(const GraphDocument& doc, const Node& n, const NodeType& type, ValidationReport& report) {
  const auto routes = bypass_routes(n, type);
  std::set<std::string> reported;
  for (const Link& l : doc.links_from(n.id)) {
    if (routes.count(l.from_output) || !reported.insert(l.from_output).second) continue;
    const PortSpec* out = type.find_output(l.from_output);
    const std::string kind = out ? out->type : std::string("?");
    report.errors.push_back(Error{n.id, "the node is bypassed, but its output '" + l.from_output + "' (" + kind +
                                            "), which '" + l.to_node + "' reads, has no connected input of type " +
                                            kind + " to pass through; turn bypass off or connect such an input"});
  }
}

}  // namespace

ValidationReport validate_document(const GraphDocument& doc, const Registry& registry,
                                   const std::vector<std::string>& targets) {
  ValidationReport report;
  for (const auto& t : targets) {
    if (!doc.find_node(t)) report.errors.push_back(Error{t, "there is no node '" + t + "' to run; check the id"});
  }
  if (!report.errors.empty()) return report;
  if (std::string c = find_cycle_node(doc); !c.empty()) {
    report.errors.push_back(Error{c, "the node is part of a cycle of links; remove one link of the cycle"});
    return report;
  }
  std::set<std::string> scope;
  if (!targets.empty()) {
    auto plan = plan_execution(doc, targets);
    if (!plan.ok()) {
      report.errors.push_back(plan.error());
      return report;
    }
    scope.insert(plan.value().begin(), plan.value().end());
    report.plan = std::move(plan.value());
  }
  for (const Node& n : doc.nodes()) {
    if (!scope.empty() && !scope.count(n.id)) continue;
    const NodeType* type = registry.find(n.type);
    if (!type) {
      report.errors.push_back(Error{n.id, "unknown node type '" + n.type +
                                              "'; install the plugin that provides it or remove the node"});
      continue;
    }
    if (n.type_version > type->version) {
      report.errors.push_back(Error{n.id, type->name + " version " + std::to_string(n.type_version) +
                                              " is newer than this build's version " +
                                              std::to_string(type->version) + "; update Vidgraph"});
      continue;
    }
    if (n.type_version < type->version && !type->upgrade) {
      report.warnings.push_back(Error{n.id, "saved with " + type->name + " version " +
                                                std::to_string(n.type_version) + " (current " +
                                                std::to_string(type->version) + "); params are used as they are"});
    }
    check_inputs(doc, registry, n, *type, report);
    if (n.bypass) {
      check_bypass(doc, n, *type, report);
    } else {
      check_params(n, *type, report);
    }
  }
  return report;
}

Result<std::vector<std::string>> upgrade_node_types(GraphDocument& doc, const Registry& registry) {
  std::vector<std::string> upgraded;
  for (const Node& n : std::vector<Node>(doc.nodes())) {
    const NodeType* type = registry.find(n.type);
    if (!type || !type->upgrade || n.type_version >= type->version) continue;
    Result<json> params = Error{};
    try {
      params = type->upgrade(n.type_version, n.params);
    } catch (const std::exception& e) {
      params = Error{n.id, e.what()};
    }
    if (!params.ok()) {
      return Error{n.id, "upgrading " + type->name + " from version " + std::to_string(n.type_version) +
                             " failed: " + params.error().message + "; re-create the node"};
    }
    if (auto s = doc.set_node_data(n.id, type->version, std::move(params.value())); !s) return s.error();
    upgraded.push_back(n.id);
  }
  return upgraded;
}

}  // namespace vidgraph::engine
