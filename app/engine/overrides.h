// `--set NODE.PARAM=VALUE` overrides: parsing, type-checked value conversion, application to a
// document (callers apply them to a copy; the file on disk is never changed).
//
// Value syntax by param kind: Int/Seed: a decimal integer; Float: a number; Bool: true/false/1/0/
// yes/no/on/off; Enum: one of the choices (case-sensitive); String/Text/FilePath/FolderPath: the text
// as is. A value may also be given as JSON of the right type (e.g. quoted strings).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "document.h"
#include "node_type.h"
#include "registry.h"
#include "result.h"

namespace vidgraph::engine {

struct ParamOverride {
  std::string node_id;
  std::string param;
  std::string value;  // raw text
};

// Splits "NODE.PARAM=VALUE" (node ids contain no '.'; VALUE may contain anything, even '='); NODE
// may be a subgraph path "instance/inner".
Result<ParamOverride> parse_override(const std::string& text);
// Converts raw text into the param's JSON value and checks it against the spec (range, choices).
Result<nlohmann::json> parse_param_value(const ParamSpec& spec, const std::string& raw);
// Parses and applies every override; the first error names the override and the node.
Status apply_overrides(GraphDocument& doc, const Registry& registry, const std::vector<std::string>& overrides);
// What every run does to its copy of the document, in this order: node-type upgrades
// (validation.h), then the overrides, which name the params of the current type versions (a param
// an upgrade renamed is set under its new name and not overwritten by the old value). A document
// with subgraph instances is then expanded (subgraph.h): overrides of an instance's exposed params
// (NODE.PARAM) apply before, those of inner nodes (NODE/INNER.PARAM) after, and `doc` becomes the
// expanded document.
Status upgrade_and_apply_overrides(GraphDocument& doc, const Registry& registry,
                                   const std::vector<std::string>& overrides);

}  // namespace vidgraph::engine
