// Parameter values, descriptors and validation. See attention_params.h.
#include "plugins/api/attention_params.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace vidgraph::plugin {
namespace {

std::string where(const std::string& method, const ParamDescriptor& d) {
  return "parameter '" + d.name + "'" + (method.empty() ? "" : " of method '" + method + "'");
}

std::string bound_text(const ParamDescriptor& d) {
  std::ostringstream s;
  s << "[" << d.min << ", " << d.max << (d.max_exclusive ? ")" : "]");
  return s.str();
}

bool in_range(const ParamDescriptor& d, double x) {
  if (std::isnan(x) || x < d.min) return false;
  return d.max_exclusive ? x < d.max : x <= d.max;
}

ParamValue checked(const std::string& m, const ParamDescriptor& d, const ParamValue& v) {
  const std::string got = param_value_to_string(v);
  switch (d.type) {
    case ParamType::Bool:
      if (!std::holds_alternative<bool>(v)) throw std::invalid_argument(where(m, d) + " must be true or false, got " + got);
      return v;
    case ParamType::Int:
      if (!std::holds_alternative<int64_t>(v)) throw std::invalid_argument(where(m, d) + " must be an integer, got " + got);
      if (!in_range(d, static_cast<double>(std::get<int64_t>(v))))
        throw std::invalid_argument(where(m, d) + " must be in " + bound_text(d) + ", got " + got);
      return v;
    case ParamType::Float: {
      double x = 0;
      if (std::holds_alternative<double>(v)) x = std::get<double>(v);
      else if (std::holds_alternative<int64_t>(v)) x = static_cast<double>(std::get<int64_t>(v));
      else throw std::invalid_argument(where(m, d) + " must be a number, got " + got);
      if (!in_range(d, x)) throw std::invalid_argument(where(m, d) + " must be in " + bound_text(d) + ", got " + got);
      return ParamValue(x);
    }
    case ParamType::String: {
      if (!std::holds_alternative<std::string>(v)) throw std::invalid_argument(where(m, d) + " must be a string, got " + got);
      const auto& s = std::get<std::string>(v);
      if (d.choices.empty()) return v;
      for (const auto& c : d.choices) if (c == s) return v;
      std::string all;
      for (const auto& c : d.choices) all += (all.empty() ? "" : ", ") + c;
      throw std::invalid_argument(where(m, d) + " must be one of " + all + ", got '" + s + "'");
    }
    case ParamType::IntList: {
      if (!std::holds_alternative<std::vector<int64_t>>(v))
        throw std::invalid_argument(where(m, d) + " must be a list of integers, got " + got);
      const auto& l = std::get<std::vector<int64_t>>(v);
      if (d.list_size > 0 && static_cast<int64_t>(l.size()) != d.list_size)
        throw std::invalid_argument(where(m, d) + " must have " + std::to_string(d.list_size) + " values, got " + got);
      for (auto x : l)
        if (!in_range(d, static_cast<double>(x)))
          throw std::invalid_argument(where(m, d) + " values must be in " + bound_text(d) + ", got " + got);
      return v;
    }
  }
  return v;
}

template <typename T>
const T& get_typed(const ParamMap& params, const std::string& name, const char* type) {
  const auto it = params.find(name);
  if (it == params.end()) throw std::invalid_argument("parameter '" + name + "' is missing");
  if (!std::holds_alternative<T>(it->second))
    throw std::invalid_argument("parameter '" + name + "' is not " + type);
  return std::get<T>(it->second);
}

}  // namespace

const char* param_type_name(ParamType type) {
  switch (type) {
    case ParamType::Bool: return "bool";
    case ParamType::Int: return "int";
    case ParamType::Float: return "float";
    case ParamType::String: return "string";
    case ParamType::IntList: return "int list";
  }
  return "unknown";
}

std::string param_value_to_string(const ParamValue& value) {
  std::ostringstream s;
  if (std::holds_alternative<bool>(value)) s << (std::get<bool>(value) ? "true" : "false");
  else if (std::holds_alternative<int64_t>(value)) s << std::get<int64_t>(value);
  else if (std::holds_alternative<double>(value)) s << std::get<double>(value);
  else if (std::holds_alternative<std::string>(value)) s << std::get<std::string>(value);
  else {
    const auto& l = std::get<std::vector<int64_t>>(value);
    for (size_t i = 0; i < l.size(); ++i) s << (i ? "," : "") << l[i];
  }
  return s.str();
}

ParamValue param_value_from_string(const ParamDescriptor& desc, const std::string& text) {
  const std::string bad = "parameter '" + desc.name + "': cannot read '" + text + "' as " +
                          param_type_name(desc.type);
  try {
    size_t used = 0;
    switch (desc.type) {
      case ParamType::Bool:
        if (text == "true" || text == "1") return true;
        if (text == "false" || text == "0") return false;
        throw std::invalid_argument(bad);
      case ParamType::Int: {
        const int64_t x = std::stoll(text, &used);
        if (used != text.size()) throw std::invalid_argument(bad);
        return x;
      }
      case ParamType::Float: {
        const double x = std::stod(text, &used);
        if (used != text.size()) throw std::invalid_argument(bad);
        return x;
      }
      case ParamType::String: return text;
      case ParamType::IntList: {
        std::vector<int64_t> out;
        std::stringstream ss(text);
        std::string item;
        while (std::getline(ss, item, text.find('x') != std::string::npos ? 'x' : ',')) {
          out.push_back(std::stoll(item, &used));
          if (used != item.size()) throw std::invalid_argument(bad);
        }
        return out;
      }
    }
  } catch (const std::logic_error&) {
    throw std::invalid_argument(bad);
  }
  throw std::invalid_argument(bad);
}

ParamValue check_param_value(const ParamDescriptor& desc, const ParamValue& value, const std::string& method) {
  return checked(method, desc, value);
}

bool same_param_rules(const ParamDescriptor& a, const ParamDescriptor& b) {
  return a.type == b.type && a.default_value == b.default_value && a.min == b.min && a.max == b.max &&
         a.max_exclusive == b.max_exclusive && a.list_size == b.list_size && a.choices == b.choices;
}

ParamMap resolve_params(const MethodInfo& method, const ParamMap& given) {
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const auto& d : method.params) known = known || d.name == name;
    if (!known) {
      std::string all;
      for (const auto& d : method.params) all += (all.empty() ? "" : ", ") + d.name;
      throw std::invalid_argument("method '" + method.name + "' has no parameter '" + name +
                                  "' (its parameters: " + (all.empty() ? "none" : all) + ")");
    }
  }
  ParamMap out;
  for (const auto& d : method.params) {
    const auto it = given.find(d.name);
    out[d.name] = checked(method.name, d, it == given.end() ? d.default_value : it->second);
  }
  return out;
}

double param_as_double(const ParamMap& params, const std::string& name) {
  const auto it = params.find(name);
  if (it != params.end() && std::holds_alternative<int64_t>(it->second))
    return static_cast<double>(std::get<int64_t>(it->second));
  return get_typed<double>(params, name, "a number");
}
int64_t param_as_int(const ParamMap& params, const std::string& name) {
  return get_typed<int64_t>(params, name, "an integer");
}
std::string param_as_string(const ParamMap& params, const std::string& name) {
  return get_typed<std::string>(params, name, "a string");
}
std::vector<int64_t> param_as_int_list(const ParamMap& params, const std::string& name) {
  return get_typed<std::vector<int64_t>>(params, name, "a list of integers");
}

const MethodInfo* find_method(const std::vector<MethodInfo>& methods, const std::string& name) {
  for (const auto& m : methods)
    if (m.name == name) return &m;
  return nullptr;
}

const MethodInfo* find_method_of_kind(const std::vector<MethodInfo>& methods, MethodKind kind) {
  for (const auto& m : methods)
    if (m.kind == kind) return &m;
  return nullptr;
}

}  // namespace vidgraph::plugin
