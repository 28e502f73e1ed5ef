// Save Latent: writes the latent (exact bytes, float32) and its provenance to a safetensors file,
// atomically, refusing to replace an existing file unless overwrite is on.
#include <filesystem>

#include "models/io/safetensors.h"
#include "nodes/output_path.h"
#include "nodes/types/latent.h"
#include "nodes/types/node_types.h"
#include "nodes/types/node_util.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

engine::Result<engine::ValueMap> compute_save_latent(engine::NodeContext& ctx) {
  const Latent& latent = ctx.input_as<Latent>("latent");
  const std::string path = ctx.param_path("filename");
  const bool overwrite = ctx.param_bool("overwrite") || ctx.overwrite();
  if (std::string problem = check_output_path(path, overwrite); !problem.empty()) {
    return node_error(ctx, problem);
  }
  std::map<std::string, std::string> metadata = latent.info;
  metadata[kLatentFormatKey] = kLatentFormatValue;
  try {
    model_io::save_safetensors(path, {{kLatentTensorName, latent.samples}}, metadata);
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Could not save the latent: ") + e.what());
  }
  ctx.log_info("Saved latent to " + path + ".");
  return engine::ValueMap{{"path", engine::make_value(kPathType, path)}};
}

}  // namespace

engine::NodeType save_latent_node() {
  engine::NodeType t;
  t.name = "SaveLatent";
  t.display_name = "Save Latent";
  t.category = "latent";
  t.description = "Saves the latent to a safetensors file (exact float32 values plus the sampler's "
                  "settings as metadata), for reproducing runs and comparing them.";
  t.version = 1;
  t.inputs = {{"latent", kLatentType, false, "The latent to save."}};
  t.outputs = {{"path", kPathType, false, "The written file."}};
  t.params = {
      ParamSpec::file_path("filename", "{output}/latent.safetensors", "Safetensors (*.safetensors)",
                           "Output file. {output}/ = the run's output folder."),
      ParamSpec::boolean("overwrite", false, "Replace an existing file."),
  };
  t.compute = compute_save_latent;
  t.fingerprint = output_fingerprint("filename");
  return t;
}

}  // namespace vidgraph::nodes
