// Node-type descriptors: what a node type declares (ports, params, version, upgrade hook, compute).
//
// Contract:
//   - `name` is the stable id written in workflow files ("LoadImage"); lookups are case-insensitive
//     but files keep the registered spelling. `version` starts at 1 and grows when params or ports
//     change incompatibly; `upgrade` then converts params saved by an older version.
//   - Port value types are upper-case names ("IMAGE", "LATENT", "MODEL", "CONDITIONING", "VIDEO");
//     the special type "*" accepts and produces any type. A link is valid when both ends have the
//     same type or one is "*".
//   - Param values are JSON: Int and Seed → integer, Float → number, Bool → boolean, and String,
//     Text, Enum, FilePath, FolderPath → string. min/max apply to Int, Float and Seed; Enum values
//     must be one of `choices`; max_exclusive makes max an open bound; a `rule` adds a check of its
//     own. Missing params take their default before compute runs.
//   - compute runs on the engine's worker thread. It returns the output values (one per declared
//     output port, any subset for optional outputs) or an Error; an exception it throws becomes a
//     node error with the exception's message. It must poll ctx.cancelled() in long loops.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "result.h"
#include "run_options.h"
#include "value.h"

namespace vidgraph::engine {

class NodeContext;

struct PortSpec {
  std::string name;         // "image"; unique among the node's inputs (or outputs)
  std::string type;         // "IMAGE", or "*" for any
  bool optional = false;    // an input may be left unconnected; an output may be absent for some params
  std::string description;
};

enum class ParamKind { Int, Float, Bool, String, Text, Enum, FilePath, FolderPath, Seed };

// "int", "float", "bool", "string", "text", "enum", "file_path", "folder_path", "seed".
const char* to_string(ParamKind kind);
std::optional<ParamKind> param_kind_from_string(const std::string& name);

struct ParamSpec {
  std::string name;                 // "steps"; unique within the node type
  ParamKind kind = ParamKind::Int;
  nlohmann::json default_value;     // must itself be valid for the spec
  std::optional<double> min;        // Int, Float, Seed
  std::optional<double> max;
  std::int64_t step = 0;            // Int: > 0 = only min + k·step is valid (frames 4k + 1: min 1, step 4)
  bool max_exclusive = false;       // the value must stay below max (e.g. a fraction in [0, 1))
  std::vector<std::string> choices; // Enum
  std::string description;
  std::string display_name;         // empty = name
  std::string file_filter;          // FilePath: e.g. "Images (*.png *.jpg)"; empty = any
  bool advanced = false;            // hint for the GUI's collapsed section
  // FilePath, FolderPath: the node writes or creates this place. A workflow from a shared file may
  // write only inside the output folder (write_places.h); the engine checks every such param.
  bool writes = false;
  // Optional rule past the kind and range (a list's format, a plugin's constraint), run by check()
  // once those pass: "" when the value is fine, else a sentence naming the param and the fix.
  std::function<std::string(const nlohmann::json& value)> rule;

  // Convenience constructors.
  static ParamSpec integer(std::string name, std::int64_t def, std::optional<double> min = {},
                           std::optional<double> max = {}, std::string description = {});
  static ParamSpec real(std::string name, double def, std::optional<double> min = {},
                        std::optional<double> max = {}, std::string description = {});
  static ParamSpec boolean(std::string name, bool def, std::string description = {});
  static ParamSpec string(std::string name, std::string def, std::string description = {});
  static ParamSpec text(std::string name, std::string def, std::string description = {});
  static ParamSpec enumeration(std::string name, std::vector<std::string> choices, std::string def,
                               std::string description = {});
  static ParamSpec file_path(std::string name, std::string def, std::string file_filter = {},
                             std::string description = {});
  static ParamSpec folder_path(std::string name, std::string def, std::string description = {});
  static ParamSpec seed(std::string name, std::int64_t def = 0, std::string description = {});

  // This spec with `step` set (ParamSpec::integer("frames", 121, 1, 1025).with_step(4)).
  ParamSpec with_step(std::int64_t every) const;
  // This spec marked as a place the node writes or creates (ParamSpec::file_path(...).written()).
  ParamSpec written() const;

  // Checks one value against this spec; the error message names the param (caller adds the node).
  Status check(const nlohmann::json& value) const;
};

using ComputeFn = std::function<Result<ValueMap>(NodeContext& ctx)>;
// Converts params saved by type version `from_version` to the current version's params.
using UpgradeFn = std::function<Result<nlohmann::json>(int from_version, const nlohmann::json& params)>;
// Extra cache-key material that params alone do not capture (e.g. an input file's size and mtime).
// Receives the params (defaults filled) and the run's path rules.
using FingerprintFn = std::function<std::string(const nlohmann::json& params, const RunOptions& options)>;
// A check against the run's files (a writer's target), made before any node of the run starts and
// skipped for nodes the cache will serve: "" when fine, else the problem and the ways out.
using PreflightFn = std::function<std::string(const nlohmann::json& params, const RunOptions& options)>;

struct NodeType {
  std::string name;          // "LoadImage"
  std::string display_name;  // "Load Image"; empty = name
  std::string category;      // "image", "model", "sampling", ... ("a/b" for sub-menus)
  std::string description;
  int version = 1;
  std::vector<PortSpec> inputs;
  std::vector<PortSpec> outputs;
  std::vector<ParamSpec> params;
  UpgradeFn upgrade;          // optional
  FingerprintFn fingerprint;  // optional
  PreflightFn preflight;      // optional
  bool always_run = false;    // never served from the cache (non-deterministic or external state)
  // In a run of several processes (ranks), nodes of this type run on every rank, with the nodes
  // they need, because their compute works together with the other ranks (collectives); every
  // other node runs on rank 0 alone.
  bool every_rank = false;
  ComputeFn compute;          // required

  const PortSpec* find_input(const std::string& port) const;
  const PortSpec* find_output(const std::string& port) const;
  const ParamSpec* find_param(const std::string& param) const;
  // A params object with every declared param present: `params`' values, defaults for the rest.
  // Unknown keys are kept.
  nlohmann::json params_with_defaults(const nlohmann::json& params) const;
};

// True when a link from an output of type `from` to an input of type `to` is allowed.
bool value_types_compatible(const std::string& from, const std::string& to);

// JSON description of one node type (used by `vidgraph-run nodes --json` and the GUI palette).
nlohmann::json describe_node_type(const NodeType& type);

}  // namespace vidgraph::engine
