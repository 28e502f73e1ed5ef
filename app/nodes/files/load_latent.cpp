// Load Latent: reads a latent written by Save Latent (or any safetensors file with one 5-D
// `latent` tensor) back, bit for bit.
#include <c10/util/Exception.h>

#include "models/io/safetensors.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/input_file.h"
#include "nodes/sampling/latent.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

engine::Result<engine::ValueMap> compute_load_latent(engine::NodeContext& ctx) {
  const std::string path = ctx.param_path("path");
  const std::string bad = check_input_path("path", path, InputKind::File,
                                           "a latent .safetensors file written by Save Latent");
  if (!bad.empty()) return node_error(ctx, bad);
  Latent latent;
  try {
    const auto file = model_io::SafetensorsFile::open(path);
    if (!file.contains(kLatentTensorName)) {
      return node_error(ctx, "'" + path + "' holds no tensor named 'latent'; it was not written by "
                             "Save Latent.");
    }
    latent.samples = file.load(kLatentTensorName, c10::Device(c10::kCPU), at::kFloat);
    latent.info = file.metadata();
    latent.info.erase(kLatentFormatKey);
  } catch (const c10::Error& e) {  // a LibTorch check: its text without the C++ backtrace
    return node_error(ctx, "Could not read the latent in '" + path + "': " +
                           e.what_without_backtrace() + "; re-save it with Save Latent.");
  } catch (const std::exception& e) {
    return node_error(ctx, "Could not read the latent in '" + path + "': " + e.what() +
                           "; re-save it with Save Latent.");
  }
  if (latent.samples.dim() != 5) {
    return node_error(ctx, "The latent in '" + path + "' has " +
                           std::to_string(latent.samples.dim()) +
                           " dimensions; expected 5 ([batch, channels, frames, height, width]).");
  }
  const std::size_t bytes = latent.bytes();
  return engine::ValueMap{{"latent", engine::make_value(kLatentType, std::move(latent), bytes)}};
}

}  // namespace

engine::NodeType load_latent_node() {
  engine::NodeType t;
  t.name = "LoadLatent";
  t.display_name = "Load Latent";
  t.category = "latent";
  t.description = "Loads a latent saved by Save Latent (safetensors), exactly, e.g. to decode it "
                  "again or to start sampling from it.";
  t.outputs = {{"latent", kLatentType, false, "The loaded latent [1, C, T, H, W] float32."}};
  t.params = {
      ParamSpec::file_path("path", "", "Safetensors (*.safetensors)", "The latent file."),
  };
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    return file_param_fingerprint(params, options, "path");
  };
  t.compute = compute_load_latent;
  return t;
}

}  // namespace vidgraph::nodes
