// Method parameters of the attention backend: typed values, descriptors (name, type, default, range,
// description) and the validation that fills defaults and rejects unknown names and bad values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace vidgraph::plugin {

enum class ParamType { Bool, Int, Float, String, IntList };

// A parameter value. Int params accept an int64; Float params accept a double or an int64;
// String params accept one of the descriptor's choices; IntList params (e.g. the tile shape)
// a vector of int64.
using ParamValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;
using ParamMap = std::map<std::string, ParamValue>;

struct ParamDescriptor {
  std::string name;
  ParamType type = ParamType::Float;
  ParamValue default_value;
  double min = 0.0;            // Int/Float/IntList elements: inclusive lower bound
  double max = 0.0;            // Int/Float/IntList elements: upper bound (see max_exclusive)
  bool max_exclusive = false;  // true: value < max (e.g. sparsity in [0, 1))
  int64_t list_size = 0;       // IntList: required length (0 = any)
  std::vector<std::string> choices;  // String: allowed values
  std::string description;
};

// What a method computes, from its descriptor: callers branch on this, never on a method's name.
enum class MethodKind {
  Dense,         // every query-key pair (full)
  Sparse,        // a selection of key tiles per query tile (vsa)
  SparseLinear,  // a sparse selection plus a linear branch over all tokens (sla_star)
};

struct MethodInfo {
  std::string name;
  std::string description;
  std::vector<ParamDescriptor> params;
  MethodKind kind = MethodKind::Dense;
  // The layer extras the method reads (AttentionExtras): callers compute and pass only these.
  bool uses_gate = false;    // the VSA gate (to_gate_compress output)
  bool uses_proj_l = false;  // the SLA* linear-branch projection
};

const char* param_type_name(ParamType type);

// Renders a value for messages and tools ("0.875", "4,4,4", "softmax", "true").
std::string param_value_to_string(const ParamValue& value);

// Parses text (from a command line) as a value of `desc`'s type; throws std::invalid_argument naming
// the parameter when the text does not parse.
ParamValue param_value_from_string(const ParamDescriptor& desc, const std::string& text);

// Checks one value against `desc` and returns it normalised (an int64 given to a Float param becomes
// a double). Throws std::invalid_argument naming the parameter (and `method` when not empty) for a
// wrong type, a value out of range, a list of the wrong length or a string not among the choices.
ParamValue check_param_value(const ParamDescriptor& desc, const ParamValue& value, const std::string& method = {});

// Whether two descriptors accept the same values with the same default (names and descriptions
// aside): what lets two methods share one workflow param.
bool same_param_rules(const ParamDescriptor& a, const ParamDescriptor& b);

// Returns `given` completed with the defaults of `method`. Throws std::invalid_argument naming the
// method and the parameter for an unknown name, a wrong type, a value out of range or not a choice.
ParamMap resolve_params(const MethodInfo& method, const ParamMap& given);

// Typed getters on a resolved map; throw std::invalid_argument if absent or of another type.
double param_as_double(const ParamMap& params, const std::string& name);
int64_t param_as_int(const ParamMap& params, const std::string& name);
std::string param_as_string(const ParamMap& params, const std::string& name);
std::vector<int64_t> param_as_int_list(const ParamMap& params, const std::string& name);

// Finds a method by name in a list; nullptr if absent.
const MethodInfo* find_method(const std::vector<MethodInfo>& methods, const std::string& name);

// The first method of `kind` in a list; nullptr if none.
const MethodInfo* find_method_of_kind(const std::vector<MethodInfo>& methods, MethodKind kind);

}  // namespace vidgraph::plugin
