// Wan DiT checkpoints: detection of the layout, the config and the key mapping, then loading
// shard by shard straight to the model's device and dtypes; and a writer for each layout.
//
// Layouts read (detected automatically from a path):
//   - a folder with `*.safetensors.index.json` + its shards (official Wan2.2 release, or a diffusers
//     `transformer/` folder; a diffusers repo root with a `transformer/` subfolder also works);
//   - a folder with *.safetensors files and no index (all of them are read);
//   - one .safetensors file (single-file repacks, official or diffusers names, any prefix such as
//     `model.diffusion_model.`, fp32/fp16/bf16, or fp8: plain F8_E4M3/F8_E5M2 or Kijai's / ComfyUI's
//     scaled fp8 with `<name>.scale_weight` / `weight_scale`, dequantised at load: scaled_fp8.h);
//   - one .gguf file (QuantStack's Wan2.2-TI2V-5B-GGUF, made by ComfyUI-GGUF: official names,
//     `general.architecture` = wan, Q8_0 / Q4_K_M / ... dequantised at load: models/io/gguf.h).
// Files are told apart by their first bytes, not their names.
// The config comes from the tensor shapes, with config.json beside the weights (or our writer's
// `vidgraph_wan_config` metadata) as a hint for the head count.
//
// Errors (std::runtime_error) name the file and the tensor, with the expected and found shape or
// dtype. Missing sparse extras (`to_gate_compress`, `proj_l`) are zero-initialised when the config
// asks for them; present ones are loaded. Unknown tensors are reported in the log and skipped.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "models/io/wan_dit_identity.h"
#include "models/wan/wan_config.h"
#include "models/wan/wan_keys.h"
#include "models/wan/wan_model.h"

namespace vidgraph::model_io {
class TensorFile;
struct ManifestPart;
}

namespace vidgraph::wan {

enum class WanLayout {
  Official,    // folder: config.json + diffusion_pytorch_model-0000i-of-0000n.safetensors + index
  Diffusers,   // folder: config.json (diffusers keys) + shards + index, diffusers tensor names
  SingleFile,  // one .safetensors, official names with a prefix (default `model.diffusion_model.`)
};

const char* wan_layout_name(WanLayout layout);

struct WanTensorSource {
  std::string file;         // the .safetensors file holding it
  std::string stored_name;  // its name in that file
  std::vector<int64_t> shape;
  std::string dtype;        // as the file names it: "BF16", "F8_E4M3", GGUF "Q8_0", ...
  bool is_float = true;     // decodes to floats
  std::string unreadable;   // why it cannot be loaded (a GGUF type Vidgraph does not decode), or ""
};

struct WanCheckpointInfo {
  std::string path;  // what the user gave
  WanLayout layout = WanLayout::SingleFile;
  KeyScheme scheme;
  std::vector<std::string> files;                  // shards in load order
  // Their headers, read once by the inspection and used again by the load.
  std::vector<std::shared_ptr<const model_io::TensorFile>> headers;
  WanConfig config;                                // detected
  std::map<std::string, WanTensorSource> tensors;  // canonical name -> source
  std::vector<std::string> unknown;                // stored names that are not Wan DiT keys
  model_io::WanDitIdentity identity;                // which Wan model it is
};

// Reads only headers (and config.json): cheap even for the 5B model. Refuses a Wan model Vidgraph
// does not run (wan_dit_identity.h: Wan2.1 I2V/FLF2V, VACE, S2V, Animate), naming it. Which files a folder's DiT is
// read from is model_io::model_part_files' rule; each header is read once while the file is
// unchanged (TensorFile::open_shared).
WanCheckpointInfo wan_inspect_checkpoint(const std::string& path);
// The same for a part of a checkpoint manifest: its files and headers as the manifest resolved
// and read them (no folder listed, no index parsed again).
WanCheckpointInfo wan_inspect_checkpoint(const model_io::ManifestPart& part);

// Told before each tensor loads: the bytes loaded so far and in all (as the parameters hold them).
// It returns false to stop the load, which then throws WanLoadStopped (a user cancelled it).
using WanLoadProgress = std::function<bool(int64_t loaded, int64_t total)>;
struct WanLoadStopped : std::runtime_error {
  WanLoadStopped() : std::runtime_error("The load of the Wan DiT was stopped.") {}
};

// Loads every parameter of `model` from the checkpoint, shard by shard, converting to each
// parameter's device and dtype. Throws on missing tensors (except sparse extras, zeroed), shape
// mismatch and non-float dtypes, naming the file and tensor.
// keep_fp8: every linear weight stored as F8_* stays fp8 (wan_layers.h: WanLinear's fp8_table).
void wan_load_weights(WanModelImpl& model, const WanCheckpointInfo& info, bool keep_fp8 = false,
                      const WanLoadProgress& progress = {});

struct WanLoadOptions {
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType compute_dtype = at::kFloat;  // bf16/fp16 on GPU
  // Force the sparse extras into the model (zero when the checkpoint has none).
  bool with_gate_compress = false;
  bool with_proj_l = false;
  // Block swap: the last N blocks stay in (pinned) host memory and stream to the device as they
  // run (wan_block_swap.h); 0 keeps every block on the device.
  int64_t offload_blocks = 0;
  // Linear weights stored as fp8 (Kijai's / ComfyUI's scaled fp8 files) stay fp8 in memory, one
  // byte per weight instead of two in bf16, and are looked up per layer as it runs. Others load
  // as usual. Such a model can sample and train LoRAs, not be fine-tuned in full.
  bool keep_fp8 = false;
  WanLoadProgress progress;  // optional: progress and stop of the weights' load
};

// Inspect + build + load.
WanModel wan_load_model(const std::string& path, const WanLoadOptions& options);
WanModel wan_load_model(const WanCheckpointInfo& info, const WanLoadOptions& options);

struct WanSaveOptions {
  WanLayout layout = WanLayout::Official;
  std::optional<at::ScalarType> dtype;            // cast every tensor (fp16/bf16 repacks); default: as is
  std::string prefix = "model.diffusion_model.";  // SingleFile only
  int64_t shards = 1;                             // folder layouts: number of shard files
};

// Writes `model`'s weights in a layout. Folder layouts take a folder path (created if needed) and
// write config.json, the shards and the index json; SingleFile takes the .safetensors path.
void wan_save_checkpoint(WanModelImpl& model, const std::string& path, const WanSaveOptions& options);

}  // namespace vidgraph::wan
