// Node-type descriptors: param specs, their checks, and the JSON description of a type.
#include "node_type.h"
#include "listing.h"

#include <cmath>
#include <sstream>

namespace vidgraph::engine {
namespace {

using nlohmann::json;

const char* kKindNames[] = {"int", "float", "bool", "string", "text", "enum", "file_path", "folder_path", "seed"};

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

ParamSpec make_spec(std::string name, ParamKind kind, json def, std::string description) {
  ParamSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.default_value = std::move(def);
  s.description = std::move(description);
  return s;
}

// "number nan", "number 2.5", "string": what a wrongly typed value is, for messages.
std::string describe_value(const json& value) {
  if (value.is_number_float()) return "number " + format_number(value.get<double>());
  return value.type_name();
}

Status check_range(const ParamSpec& spec, double v) {
  if (std::isnan(v)) return make_error("param '" + spec.name + "' is not a number (NaN); set a finite value");
  const bool above = spec.max && (spec.max_exclusive ? v >= *spec.max : v > *spec.max);
  if ((spec.min && v < *spec.min) || above) {
    std::string range = "[" + (spec.min ? format_number(*spec.min) : std::string("-inf")) + ", " +
                        (spec.max ? format_number(*spec.max) : std::string("inf")) +
                        (spec.max && spec.max_exclusive ? ")" : "]");
    return make_error("param '" + spec.name + "' is " + format_number(v) + ", outside " + range +
                      "; set a value in that range");
  }
  return {};
}

// Int params with a step: (value - min) must be a multiple of it.
Status check_step(const ParamSpec& spec, const json& value) {
  if (spec.kind != ParamKind::Int || spec.step <= 0 || !value.is_number_integer()) return {};
  const auto base = static_cast<std::int64_t>(spec.min.value_or(0.0));
  const auto v = value.is_number_unsigned() ? static_cast<std::int64_t>(value.get<std::uint64_t>())
                                            : value.get<std::int64_t>();
  const std::int64_t offset = v - base;
  if (offset % spec.step == 0) return {};
  const std::int64_t below = base + (offset / spec.step) * spec.step;
  return make_error("param '" + spec.name + "' is " + std::to_string(v) + "; it must be " + std::to_string(base) +
                    " plus a multiple of " + std::to_string(spec.step) + " (e.g. " + std::to_string(below) +
                    " or " + std::to_string(below + spec.step) + ")");
}

Status check_kind_and_range(const ParamSpec& spec, const json& value) {
  switch (spec.kind) {
    case ParamKind::Int:
    case ParamKind::Seed:
      // A JSON float (NaN and infinities included: nlohmann carries them although it dumps them
      // as null) is never an integer, not even 3.0: the node would read it with get<int64_t>.
      if (!value.is_number_integer()) {
        return make_error("param '" + spec.name + "' must be an integer, got " + describe_value(value));
      }
      if (auto range = check_range(spec, value.is_number_unsigned() ? static_cast<double>(value.get<std::uint64_t>())
                                                                     : static_cast<double>(value.get<std::int64_t>()));
          !range.ok()) {
        return range;
      }
      return check_step(spec, value);
    case ParamKind::Float: {
      if (!value.is_number()) {
        return make_error("param '" + spec.name + "' must be a number, got " + std::string(value.type_name()));
      }
      const double v = value.get<double>();
      if (!std::isfinite(v)) {
        return make_error("param '" + spec.name + "' is " + format_number(v) + "; it must be a finite number");
      }
      return check_range(spec, v);
    }
    case ParamKind::Bool:
      if (!value.is_boolean()) {
        return make_error("param '" + spec.name + "' must be true or false, got " + std::string(value.type_name()));
      }
      return {};
    default:
      break;
  }
  if (!value.is_string()) {
    return make_error("param '" + spec.name + "' must be a string, got " + std::string(value.type_name()));
  }
  if (spec.kind == ParamKind::Enum) {
    const std::string v = value.get<std::string>();
    for (const auto& c : spec.choices) {
      if (c == v) return {};
    }
    return make_error("param '" + spec.name + "' is '" + v + "', which is not one of: " + comma_list(spec.choices) +
                      "; pick one of those");
  }
  return {};
}

}  // namespace

ParamSpec ParamSpec::with_step(std::int64_t every) const {
  ParamSpec p = *this;
  p.step = every;
  return p;
}

ParamSpec ParamSpec::written() const {
  ParamSpec p = *this;
  p.writes = true;
  return p;
}

const char* to_string(ParamKind kind) { return kKindNames[static_cast<int>(kind)]; }

std::optional<ParamKind> param_kind_from_string(const std::string& name) {
  for (int i = 0; i < 9; ++i) {
    if (name == kKindNames[i]) return static_cast<ParamKind>(i);
  }
  return std::nullopt;
}

ParamSpec ParamSpec::integer(std::string name, std::int64_t def, std::optional<double> min,
                             std::optional<double> max, std::string description) {
  ParamSpec s = make_spec(std::move(name), ParamKind::Int, def, std::move(description));
  s.min = min;
  s.max = max;
  return s;
}

ParamSpec ParamSpec::real(std::string name, double def, std::optional<double> min, std::optional<double> max,
                          std::string description) {
  ParamSpec s = make_spec(std::move(name), ParamKind::Float, def, std::move(description));
  s.min = min;
  s.max = max;
  return s;
}

ParamSpec ParamSpec::boolean(std::string name, bool def, std::string description) {
  return make_spec(std::move(name), ParamKind::Bool, def, std::move(description));
}

ParamSpec ParamSpec::string(std::string name, std::string def, std::string description) {
  return make_spec(std::move(name), ParamKind::String, std::move(def), std::move(description));
}

ParamSpec ParamSpec::text(std::string name, std::string def, std::string description) {
  return make_spec(std::move(name), ParamKind::Text, std::move(def), std::move(description));
}

ParamSpec ParamSpec::enumeration(std::string name, std::vector<std::string> choices, std::string def,
                                 std::string description) {
  ParamSpec s = make_spec(std::move(name), ParamKind::Enum, std::move(def), std::move(description));
  s.choices = std::move(choices);
  return s;
}

ParamSpec ParamSpec::file_path(std::string name, std::string def, std::string file_filter, std::string description) {
  ParamSpec s = make_spec(std::move(name), ParamKind::FilePath, std::move(def), std::move(description));
  s.file_filter = std::move(file_filter);
  return s;
}

ParamSpec ParamSpec::folder_path(std::string name, std::string def, std::string description) {
  return make_spec(std::move(name), ParamKind::FolderPath, std::move(def), std::move(description));
}

ParamSpec ParamSpec::seed(std::string name, std::int64_t def, std::string description) {
  ParamSpec s = make_spec(std::move(name), ParamKind::Seed, def, std::move(description));
  s.min = 0.0;
  return s;
}

Status ParamSpec::check(const json& value) const {
  Status status = check_kind_and_range(*this, value);
  if (!status.ok() || !rule) return status;
  if (std::string problem = rule(value); !problem.empty()) return make_error(std::move(problem));
  return {};
}

const PortSpec* NodeType::find_input(const std::string& port) const {
  for (const auto& p : inputs) {
    if (p.name == port) return &p;
  }
  return nullptr;
}

const PortSpec* NodeType::find_output(const std::string& port) const {
  for (const auto& p : outputs) {
    if (p.name == port) return &p;
  }
  return nullptr;
}

const ParamSpec* NodeType::find_param(const std::string& param) const {
  for (const auto& p : params) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

json NodeType::params_with_defaults(const json& given) const {
  json out = given.is_object() ? given : json::object();
  for (const auto& spec : params) {
    if (!out.contains(spec.name) || out[spec.name].is_null()) out[spec.name] = spec.default_value;
  }
  return out;
}

bool value_types_compatible(const std::string& from, const std::string& to) {
  return from == to || from == "*" || to == "*";
}

json describe_node_type(const NodeType& type) {
  json j;
  j["name"] = type.name;
  j["display_name"] = type.display_name.empty() ? type.name : type.display_name;
  j["category"] = type.category;
  j["description"] = type.description;
  j["version"] = type.version;
  j["always_run"] = type.always_run;
  j["every_rank"] = type.every_rank;
  auto ports = [](const std::vector<PortSpec>& specs, bool with_optional) {
    json arr = json::array();
    for (const auto& p : specs) {
      json pj{{"name", p.name}, {"type", p.type}, {"description", p.description}};
      if (with_optional) pj["optional"] = p.optional;
      arr.push_back(pj);
    }
    return arr;
  };
  j["inputs"] = ports(type.inputs, true);
  j["outputs"] = ports(type.outputs, false);
  json params = json::array();
  for (const auto& p : type.params) {
    json pj{{"name", p.name}, {"kind", to_string(p.kind)}, {"default", p.default_value},
            {"description", p.description}, {"display_name", p.display_name.empty() ? p.name : p.display_name},
            {"advanced", p.advanced}};
    if (p.min) pj["min"] = *p.min;
    if (p.max) pj["max"] = *p.max;
    if (p.step > 0) pj["step"] = p.step;
    if (p.max && p.max_exclusive) pj["max_exclusive"] = true;
    if (p.kind == ParamKind::Enum) pj["choices"] = p.choices;
    if (!p.file_filter.empty()) pj["file_filter"] = p.file_filter;
    if (p.writes) pj["writes"] = true;
    params.push_back(pj);
  }
  j["params"] = params;
  return j;
}

}  // namespace vidgraph::engine
