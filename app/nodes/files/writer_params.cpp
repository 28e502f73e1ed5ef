// Implements writer_params.h.
#include "nodes/files/writer_params.h"

namespace vidgraph::nodes {

engine::ParamSpec naming_param() {
  return engine::ParamSpec::enumeration(
      "naming", {"increment", "fail", "overwrite"}, "increment",
      "When the file exists: increment writes the next free name (name_00002.ext, ...); fail stops "
      "before the run starts; overwrite replaces an earlier output of the same kind (never a folder "
      "or any other file).");
}

namespace {

Naming naming_of(const nlohmann::json& params, const engine::RunOptions& options) {
  if (options.overwrite) return Naming::Overwrite;
  return parse_naming(params.value("naming", std::string("increment"))).value_or(Naming::Increment);
}

}  // namespace

Naming writer_naming(const engine::NodeContext& ctx) { return naming_of(ctx.params(), ctx.options()); }

OutputTarget writer_target(const nlohmann::json& params, const engine::RunOptions& options,
                           const std::string& path_param, const OutputKindFn& kind) {
  const std::string path = params.value(path_param, std::string());
  return OutputTarget{path.empty() ? path : options.resolve_path(path), naming_of(params, options),
                      kind(params)};
}

engine::PreflightFn writer_preflight(std::string path_param, OutputKindFn kind) {
  return [path_param = std::move(path_param), kind = std::move(kind)](
             const nlohmann::json& params, const engine::RunOptions& options) -> std::string {
    const OutputTarget target = writer_target(params, options, path_param, kind);
    if (target.path.empty()) return {};
    std::string problem = check_output_conflict(target);
    return problem.empty() ? problem : "param '" + path_param + "': " + problem;
  };
}

nlohmann::json upgrade_overwrite_to_naming(const nlohmann::json& params) {
  nlohmann::json out = params;
  if (out.contains("overwrite")) {
    const bool replace = out["overwrite"].is_boolean() && out["overwrite"].get<bool>();
    out.erase("overwrite");
    if (!out.contains("naming")) out["naming"] = replace ? "overwrite" : "increment";
  }
  return out;
}

}  // namespace vidgraph::nodes
