// Save Latent: writes the latent (exact bytes, float32) and its provenance to a safetensors file,
// through a temporary published by its `naming` (writer_params.h).
#include <filesystem>

#include "models/io/safetensors.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"
#include "nodes/output_path.h"
#include "nodes/sampling/latent.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

OutputKind latent_kind(const nlohmann::json&) { return OutputKind::Safetensors; }

engine::Result<engine::ValueMap> compute_save_latent(engine::NodeContext& ctx) {
  const Latent& latent = ctx.input_as<Latent>("latent");
  const OutputTarget target = writer_target(ctx.params(), ctx.options(), "filename", latent_kind);
  if (std::string problem = check_output_target(target); !problem.empty()) {
    return node_error(ctx, problem);
  }
  std::map<std::string, std::string> metadata = latent.info;
  metadata[kLatentFormatKey] = kLatentFormatValue;
  remove_stale_temporaries(target.path);
  const std::string temp = temporary_sibling(target.path);
  try {
    model_io::save_safetensors(temp, {{kLatentTensorName, latent.samples}}, metadata);
  } catch (const std::exception& e) {
    remove_temporary(temp);
    return node_error(ctx, std::string("Could not save the latent: ") + e.what());
  }
  const Published published = publish_output(temp, target);
  if (!published.error.empty()) {
    remove_temporary(temp);
    return node_error(ctx, published.error);
  }
  ctx.wrote(published.path);
  ctx.log_info("Saved latent to " + published.path + ".");
  return engine::ValueMap{{"path", engine::make_value(kPathType, published.path)}};
}

}  // namespace

engine::NodeType save_latent_node() {
  engine::NodeType t;
  t.name = "SaveLatent";
  t.display_name = "Save Latent";
  t.category = "latent";
  t.description = "Saves the latent to a safetensors file (exact float32 values plus the sampler's "
                  "settings as metadata), for reproducing runs and comparing them.";
  t.version = 2;
  t.inputs = {{"latent", kLatentType, false, "The latent to save."}};
  t.outputs = {{"path", kPathType, false, "The written file."}};
  t.params = {
      ParamSpec::file_path("filename", "{output}/latent.safetensors", "Safetensors (*.safetensors)",
                           "Output file. {output}/ = the run's output folder.").written(),
      naming_param(),
  };
  t.upgrade = [](int, const nlohmann::json& params) -> engine::Result<nlohmann::json> {
    return upgrade_overwrite_to_naming(params);
  };
  t.compute = compute_save_latent;
  t.fingerprint = output_fingerprint("filename");
  t.preflight = writer_preflight("filename", latent_kind);
  return t;
}

}  // namespace vidgraph::nodes
